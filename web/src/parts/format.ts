// Numbers and times as the console shows them.
export const gpus = (n: number | null | undefined) =>
  n == null ? '—' : Number.isInteger(n) ? String(n) : n.toFixed(2);
export const hours = (n: number | null | undefined) => (n == null ? '—' : n.toFixed(n < 10 ? 2 : 1));
export const money = (n: number | null | undefined, currency = 'USD') =>
  n == null ? '—' : new Intl.NumberFormat(undefined, { style: 'currency', currency }).format(n);
export function when(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return d.toLocaleString(undefined, { dateStyle: 'short', timeStyle: 'short' });
}
export function fromNow(iso: string | null | undefined): string {
  if (!iso) return '—';
  const s = Math.round((new Date(iso).getTime() - Date.now()) / 1000);
  const a = Math.abs(s);
  const text = a < 90 ? `${a}s` : a < 5400 ? `${Math.round(a / 60)} min` : `${(a / 3600).toFixed(1)} h`;
  return s >= 0 ? `in ${text}` : `${text} ago`;
}
