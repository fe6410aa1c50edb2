import { useEffect, useId, useLayoutEffect, useRef, useState } from 'preact/hooks';

export interface MenuItem {
  label: string;
  onSelect: () => void;
  disabled?: boolean;
  danger?: boolean;
}

/**
 * A menu button (WAI-ARIA menu button pattern): Enter, Space or ArrowDown open it on the first item, ArrowUp on the
 * last; ArrowUp/ArrowDown/Home/End move, Enter or Space choose, Escape closes and Tab leaves, and the keyboard goes
 * back to the button. The menu is placed fixed beside the button, so a scrolling table never clips it.
 */
export function MenuButton(props: { label: string; accessibleName: string; items: MenuItem[]; class?: string }) {
  const id = useId();
  const button = useRef<HTMLButtonElement>(null);
  const menu = useRef<HTMLUListElement>(null);
  /** The item to focus once open: 0 the first, -1 the last; null while closed. */
  const [openAt, setOpenAt] = useState<number | null>(null);
  const [place, setPlace] = useState<{ top: number; left: number } | null>(null);
  const open = openAt !== null;

  const itemsOf = () => [...(menu.current?.querySelectorAll<HTMLButtonElement>('[role="menuitem"]') ?? [])];
  const close = (refocus: boolean) => {
    setOpenAt(null);
    setPlace(null);
    if (refocus) button.current?.focus();
  };

  /** Where the button was when the menu was placed beside it. */
  const anchor = useRef<{ top: number; left: number } | null>(null);

  useLayoutEffect(() => {
    if (!open || !button.current || !menu.current) return;
    const rect = button.current.getBoundingClientRect();
    anchor.current = { top: rect.top, left: rect.left };
    const { offsetHeight: height, offsetWidth: width } = menu.current;
    const below = rect.bottom + 4 + height <= window.innerHeight;
    setPlace({
      top: below ? rect.bottom + 4 : Math.max(4, rect.top - 4 - height),
      // Its right edge under the button's, unless that puts it off the left of the screen.
      left: Math.max(4, Math.min(rect.right - width, window.innerWidth - width - 4)),
    });
  }, [open]);

  // Once placed (a hidden menu cannot take the focus), the keyboard goes to the item it was opened on.
  useLayoutEffect(() => {
    if (place && openAt !== null) itemsOf().at(openAt)?.focus({ preventScroll: true });
  }, [place]);

  useEffect(() => {
    if (!open) return;
    const outside = (e: Event) => {
      const target = e.target as Node;
      if (!menu.current?.contains(target) && !button.current?.contains(target)) close(false);
    };
    // A menu placed by the button's position would drift from it: scrolling or resizing that moves the button closes
    // it. (A scroll event can arrive after the menu opened for a scroll that ended before: the button has not moved.)
    const away = () => {
      const rect = button.current?.getBoundingClientRect();
      const was = anchor.current;
      if (!rect || !was || Math.abs(rect.top - was.top) > 1 || Math.abs(rect.left - was.left) > 1) close(false);
    };
    document.addEventListener('pointerdown', outside);
    window.addEventListener('resize', away);
    window.addEventListener('scroll', away, true);
    return () => {
      document.removeEventListener('pointerdown', outside);
      window.removeEventListener('resize', away);
      window.removeEventListener('scroll', away, true);
    };
  }, [open]);

  const onButtonKey = (e: KeyboardEvent) => {
    if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
      e.preventDefault();
      setOpenAt(e.key === 'ArrowDown' ? 0 : -1);
    }
  };

  const onMenuKey = (e: KeyboardEvent) => {
    const items = itemsOf();
    const at = items.indexOf(document.activeElement as HTMLButtonElement);
    const move = (to: number) => {
      e.preventDefault();
      items[(to + items.length) % items.length]?.focus({ preventScroll: true });
    };
    if (e.key === 'ArrowDown') move(at + 1);
    else if (e.key === 'ArrowUp') move(at - 1);
    else if (e.key === 'Home') move(0);
    else if (e.key === 'End') move(items.length - 1);
    else if (e.key === 'Escape') {
      e.preventDefault();
      close(true);
    } else if (e.key === 'Tab') close(false);
  };

  return (
    <span class={`menu-wrap ${props.class ?? ''}`}>
      <button
        ref={button}
        type="button"
        class="small menu-button"
        aria-haspopup="menu"
        aria-expanded={open}
        aria-controls={open ? id : undefined}
        aria-label={props.accessibleName}
        onClick={() => (open ? close(false) : setOpenAt(0))}
        onKeyDown={onButtonKey}
      >
        {props.label} <span aria-hidden="true">▾</span>
      </button>
      {open && (
        <ul
          ref={menu}
          id={id}
          role="menu"
          class="menu"
          aria-label={props.accessibleName}
          style={place ? { top: `${place.top}px`, left: `${place.left}px` } : { visibility: 'hidden' }}
          onKeyDown={onMenuKey}
        >
          {props.items.map((item) => (
            <li role="none" key={item.label}>
              <button
                type="button"
                role="menuitem"
                tabIndex={-1}
                class={item.danger ? 'danger-text' : undefined}
                aria-disabled={item.disabled || undefined}
                onClick={() => {
                  if (item.disabled) return;
                  close(true);
                  item.onSelect();
                }}
              >
                {item.label}
              </button>
            </li>
          ))}
        </ul>
      )}
    </span>
  );
}
