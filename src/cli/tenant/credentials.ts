// The login file: {server, token} in <config dir>/credentials.json, readable by its owner only.
import fs from 'node:fs/promises';
import path from 'node:path';

export interface Credentials {
  server: string;
  token: string;
}

export const CREDENTIALS_FILE = 'credentials.json';

export function credentialsPath(configDir: string): string {
  return path.join(configDir, CREDENTIALS_FILE);
}

/** The stored login, or null when there is none (a damaged file counts as none: `login` rewrites it). */
export async function readCredentials(configDir: string): Promise<Credentials | null> {
  let text: string;
  try {
    text = await fs.readFile(credentialsPath(configDir), 'utf8');
  } catch {
    return null;
  }
  try {
    const value = JSON.parse(text) as Partial<Credentials>;
    return typeof value.server === 'string' && typeof value.token === 'string'
      ? { server: value.server, token: value.token }
      : null;
  } catch {
    return null;
  }
}

/**
 * Writes the file with mode 0600 in a directory with mode 0700. The token is written to a
 * temporary file created 0600 and renamed over the old one, so it is never readable by
 * others, not even for a moment, and a crash leaves the old file or the new one.
 */
export async function writeCredentials(configDir: string, credentials: Credentials): Promise<string> {
  await fs.mkdir(configDir, { recursive: true, mode: 0o700 });
  await fs.chmod(configDir, 0o700);
  const target = credentialsPath(configDir);
  const temporary = `${target}.${process.pid}.tmp`;
  const handle = await fs.open(temporary, 'w', 0o600);
  try {
    await handle.writeFile(`${JSON.stringify(credentials, null, 2)}\n`);
    await handle.chmod(0o600); // the umask may have narrowed it further, never widened; make it exact
  } finally {
    await handle.close();
  }
  await fs.rename(temporary, target);
  return target;
}

/** Removes the file; false when there was none. */
export async function removeCredentials(configDir: string): Promise<boolean> {
  try {
    await fs.unlink(credentialsPath(configDir));
    return true;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw error;
  }
}
