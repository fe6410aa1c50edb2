import { useEffect, useId, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { endSession, streamUrl, type LogEntry } from './api';
import { closedSession, SESSION_ENDED } from './events';

/** The levels of both streams: the system log sends 0-4, an instance log sends names. */
const LEVELS = ['DEBUG', 'INFO', 'WARN', 'ERROR', 'FATAL'] as const;
type Level = (typeof LEVELS)[number];

function levelOf(raw: string | number): Level {
  if (typeof raw === 'number') return LEVELS[Math.min(Math.max(raw, 0), 4)]!;
  const upper = raw.toUpperCase();
  if (upper === 'WARNING') return 'WARN';
  return (LEVELS as readonly string[]).includes(upper) ? (upper as Level) : 'INFO';
}

interface Line {
  id: number;
  level: Level;
  timestamp: string;
  content: string;
}

/** Lines kept on screen; older ones are dropped. */
const MAX_LINES = 2000;
/** Earlier lines asked for at each connection. */
const REPLAY = 200;

const CLOSE_TEXT: Record<number, string> = {
  1000: 'end of log',
  1001: 'the daemon is stopping',
  4403: 'your role no longer gives access to this log',
  4404: 'the instance was deleted',
  4429: 'the browser could not keep up',
};

type Status = { kind: 'connecting' } | { kind: 'live' } | { kind: 'closed'; text: string; retry: boolean };

/**
 * A live log: a WebSocket stream (`?token=`, `?lines=`), its lines coloured by level, with pause, a text filter and
 * a level filter. A dropped connection is made again (the last lines replayed anew); a 4401 close ends the session.
 */
export function LogView(props: { path: string; params?: Record<string, string | number>; label: string }) {
  const [lines, setLines] = useState<Line[]>([]);
  const [paused, setPaused] = useState(false);
  const [held, setHeld] = useState(0);
  const [filter, setFilter] = useState('');
  const [minLevel, setMinLevel] = useState<Level>('DEBUG');
  const [status, setStatus] = useState<Status>({ kind: 'connecting' });
  const box = useRef<HTMLDivElement>(null);
  const stick = useRef(true);
  const pausedRef = useRef(false);
  const heldLines = useRef<Line[]>([]);
  const filterId = useId();
  const levelId = useId();
  const paramsKey = JSON.stringify(props.params ?? {});

  useEffect(() => {
    let stopped = false;
    let ws: WebSocket | undefined;
    let retries = 0;
    let retryTimer: number | undefined;
    let frame: number | undefined;
    let nextId = 0;
    let incoming: Line[] = [];

    const flush = () => {
      frame = undefined;
      const batch = incoming;
      incoming = [];
      if (pausedRef.current) {
        heldLines.current = [...heldLines.current, ...batch].slice(-MAX_LINES);
        setHeld(heldLines.current.length);
      } else {
        setLines((old) => [...old, ...batch].slice(-MAX_LINES));
      }
    };

    const connect = () => {
      if (stopped) return;
      setStatus({ kind: 'connecting' });
      const params = JSON.parse(paramsKey) as Record<string, string | number>;
      const socket = new WebSocket(streamUrl(props.path, { ...params, lines: REPLAY }));
      ws = socket;
      let fresh = true;
      socket.onopen = () => {
        retries = 0;
        setStatus({ kind: 'live' });
      };
      socket.onmessage = (message) => {
        let entry: LogEntry;
        try {
          entry = JSON.parse(String(message.data)) as LogEntry;
        } catch {
          return;
        }
        if (fresh) {
          // A new connection replays the last lines: they replace what was shown.
          fresh = false;
          setLines([]);
          heldLines.current = [];
          setHeld(0);
        }
        incoming.push({
          id: nextId++,
          level: levelOf(entry.level),
          timestamp: entry.timestamp,
          content: entry.content,
        });
        frame ??= window.requestAnimationFrame(flush);
      };
      socket.onclose = (close) => {
        if (stopped || ws !== socket) return;
        if (close.code === SESSION_ENDED) {
          endSession(closedSession(close.reason, `the ${props.label.toLowerCase()} stream`));
          return;
        }
        const final = close.code === 1000 || close.code === 4403 || close.code === 4404;
        const text = CLOSE_TEXT[close.code] ?? 'connection lost';
        setStatus({ kind: 'closed', text, retry: !final });
        if (!final) retryTimer = window.setTimeout(connect, Math.min(30_000, 1000 * 2 ** retries++));
      };
    };

    connect();
    return () => {
      stopped = true;
      window.clearTimeout(retryTimer);
      if (frame !== undefined) window.cancelAnimationFrame(frame);
      ws?.close(1000, 'closed by the console');
    };
  }, [props.path, paramsKey, props.label]);

  const togglePause = () => {
    const next = !paused;
    pausedRef.current = next;
    setPaused(next);
    if (!next) {
      const release = heldLines.current;
      heldLines.current = [];
      setHeld(0);
      stick.current = true;
      setLines((old) => [...old, ...release].slice(-MAX_LINES));
    }
  };

  const shown = useMemo(() => {
    const needle = filter.trim().toLowerCase();
    const min = LEVELS.indexOf(minLevel);
    return lines.filter((l) => LEVELS.indexOf(l.level) >= min && (!needle || l.content.toLowerCase().includes(needle)));
  }, [lines, filter, minLevel]);

  useLayoutEffect(() => {
    const el = box.current;
    if (el && stick.current) el.scrollTop = el.scrollHeight;
  }, [shown]);

  const statusText =
    status.kind === 'live'
      ? paused
        ? `Paused${held ? `: ${held} new line${held === 1 ? '' : 's'} held` : ''}`
        : 'Live'
      : status.kind === 'connecting'
        ? 'Connecting…'
        : `Closed: ${status.text}${status.retry ? ', reconnecting…' : ''}`;

  return (
    <div class="logview">
      <div class="log-tools">
        <button type="button" class="small" aria-pressed={paused} onClick={togglePause}>
          {paused ? `Resume${held ? ` (${held})` : ''}` : 'Pause'}
        </button>
        <div class="inline-field">
          <label for={filterId}>Filter</label>
          <input
            id={filterId}
            type="search"
            value={filter}
            placeholder="text in the line"
            onInput={(e) => setFilter(e.currentTarget.value)}
          />
        </div>
        <div class="inline-field">
          <label for={levelId}>Level</label>
          <select id={levelId} value={minLevel} onChange={(e) => setMinLevel(e.currentTarget.value as Level)}>
            <option value="DEBUG">all</option>
            <option value="INFO">INFO and above</option>
            <option value="WARN">WARN and above</option>
            <option value="ERROR">ERROR and above</option>
          </select>
        </div>
        <button
          type="button"
          class="small"
          onClick={() => {
            setLines([]);
            heldLines.current = [];
            setHeld(0);
          }}
        >
          Clear
        </button>
        <span class={`log-status log-${status.kind}`} role="status">
          {statusText}
        </span>
      </div>
      <div
        ref={box}
        class="log"
        role="log"
        aria-live="off"
        aria-label={props.label}
        tabIndex={0}
        onScroll={(e) => {
          const el = e.currentTarget;
          stick.current = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
        }}
      >
        {shown.length === 0 && (
          <div class="log-empty">{lines.length === 0 ? 'No lines yet.' : 'No line matches the filter.'}</div>
        )}
        {shown.map((l) => (
          <div key={l.id} class={`line lvl-${l.level}`}>
            <span class="ts">{l.timestamp}</span> <span class="lvl">{l.level.padEnd(5)}</span>{' '}
            <span class="msg">{l.content}</span>
          </div>
        ))}
      </div>
    </div>
  );
}
