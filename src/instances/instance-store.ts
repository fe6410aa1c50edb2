import type { Database } from '../storage/database.js';

export type DesiredState = 'running' | 'stopped';

export interface InstanceRecord {
  id: number;
  name: string;
  bootAtStart: boolean;
  runUser: string;
  configPath: string;
  createdAt: number;
  createdBy: string;
  ownerId: number | null;
  desired: DesiredState;
  pid: number | null;
  startTicks: number | null;
}

interface Row {
  id: number;
  name: string;
  boot_at_start: number;
  run_user: string;
  config_path: string;
  created_at: number;
  created_by: string;
  owner_id: number | null;
  desired: DesiredState;
  pid: number | null;
  start_ticks: number | null;
}

const toRecord = (r: Row): InstanceRecord => ({
  id: r.id,
  name: r.name,
  bootAtStart: r.boot_at_start === 1,
  runUser: r.run_user,
  configPath: r.config_path,
  createdAt: r.created_at,
  createdBy: r.created_by,
  ownerId: r.owner_id,
  desired: r.desired,
  pid: r.pid,
  startTicks: r.start_ticks,
});

/** The SQL of instance records. Callers persist the database after a mutation. */
export class InstanceStore {
  constructor(private readonly db: Database) {}

  all(): InstanceRecord[] {
    return this.db.all<Row>('SELECT * FROM instances ORDER BY id').map(toRecord);
  }

  nameTaken(name: string, exceptId = -1): boolean {
    return this.db.get('SELECT 1 FROM instances WHERE name = ? AND id != ?', [name, exceptId]) !== undefined;
  }

  /** Inserts a record; the config path is derived from the id, so it is filled in by `setConfigPath`. */
  insert(fields: { name: string; bootAtStart: boolean; runUser: string; createdBy: string; ownerId: number; now: number }): number {
    this.db.run(
      `INSERT INTO instances (name, boot_at_start, run_user, config_path, created_at, created_by, owner_id)
       VALUES (?, ?, ?, '', ?, ?, ?)`,
      [fields.name, fields.bootAtStart ? 1 : 0, fields.runUser, fields.now, fields.createdBy, fields.ownerId],
    );
    return this.db.lastInsertRowid();
  }

  get(id: number): InstanceRecord | undefined {
    const row = this.db.get<Row>('SELECT * FROM instances WHERE id = ?', [id]);
    return row && toRecord(row);
  }

  setConfigPath(id: number, path: string): void {
    this.db.run('UPDATE instances SET config_path = ? WHERE id = ?', [path, id]);
  }

  update(id: number, fields: { name?: string; bootAtStart?: boolean; runUser?: string }): void {
    if (fields.name !== undefined) this.db.run('UPDATE instances SET name = ? WHERE id = ?', [fields.name, id]);
    if (fields.bootAtStart !== undefined) {
      this.db.run('UPDATE instances SET boot_at_start = ? WHERE id = ?', [fields.bootAtStart ? 1 : 0, id]);
    }
    if (fields.runUser !== undefined) this.db.run('UPDATE instances SET run_user = ? WHERE id = ?', [fields.runUser, id]);
  }

  setDesired(id: number, desired: DesiredState): void {
    this.db.run('UPDATE instances SET desired = ? WHERE id = ?', [desired, id]);
  }

  setProcess(id: number, pid: number | null, startTicks: number | null): void {
    this.db.run('UPDATE instances SET pid = ?, start_ticks = ? WHERE id = ?', [pid, startTicks, id]);
  }

  delete(id: number): void {
    this.db.run('DELETE FROM instances WHERE id = ?', [id]);
  }

  getMeta(key: string): string | undefined {
    return this.db.get<{ value: string }>('SELECT value FROM meta WHERE key = ?', [key])?.value;
  }

  setMeta(key: string, value: string): void {
    this.db.run('INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value', [key, value]);
  }
}
