// Numbers and times as the console shows them.
export const gpus = (n: number | null | undefined) =>
  n == null ? '—' : Number.isInteger(n) ? String(n) : n.toFixed(2);
export const hours = (n: number | null | undefined) => (n == null ? '—' : n.toFixed(n < 10 ? 2 : 1));
// Formatters are made once: building one per call (toLocaleString does) costs more than the rest of a table
// row, and a scrolled table formats dozens of cells a frame.
const moneyFormats = new Map<string, Intl.NumberFormat>();
export const money = (n: number | null | undefined, currency = 'USD') => {
  if (n == null) return '—';
  let format = moneyFormats.get(currency);
  if (!format) {
    format = new Intl.NumberFormat(undefined, { style: 'currency', currency });
    moneyFormats.set(currency, format);
  }
  return format.format(n);
};
const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'short', timeStyle: 'short' });
export function when(iso: string | null | undefined): string {
  if (!iso) return '—';
  return dateTime.format(new Date(iso));
}
export function fromNow(iso: string | null | undefined): string {
  if (!iso) return '—';
  const s = Math.round((new Date(iso).getTime() - Date.now()) / 1000);
  const a = Math.abs(s);
  const text = a < 90 ? `${a}s` : a < 5400 ? `${Math.round(a / 60)} min` : `${(a / 3600).toFixed(1)} h`;
  return s >= 0 ? `in ${text}` : `${text} ago`;
}
