// Next run times of a schedule's cron expression in its time zone,
// computed in the page (the API gives only the next one): five fields
// (minute hour day-of-month month day-of-week; *, lists, ranges, steps,
// month and day names) or @hourly, @daily, @midnight, @weekly, @monthly,
// @yearly, @annually, @every <duration>.
const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const DESCRIPTORS = { '@hourly': '0 * * * *', '@daily': '0 0 * * *', '@midnight': '0 0 * * *', '@weekly': '0 0 * * 0', '@monthly': '0 0 1 * *', '@yearly': '0 0 1 1 *', '@annually': '0 0 1 1 *' };

function field(text, lo, hi, names, base = 0) {
  const set = new Set();
  for (const part of text.split(',')) {
    const [range, stepText] = part.split('/');
    const step = stepText === undefined ? 1 : Number(stepText);
    if (!Number.isInteger(step) || step < 1) throw new Error(`bad step in ${part}`);
    const value = (s) => {
      const i = names ? names.indexOf(s.toUpperCase()) : -1;
      const v = i >= 0 ? i + base : Number(s);
      if (!Number.isInteger(v) || v < lo || v > hi) throw new Error(`${s} is out of ${lo}-${hi}`);
      return v;
    };
    let a;
    let b;
    if (range === '*') { a = lo; b = hi; } else if (range.includes('-')) { [a, b] = range.split('-').map(value); } else { a = value(range); b = stepText === undefined ? a : hi; }
    if (a > b) throw new Error(`bad range ${range}`);
    for (let v = a; v <= b; v += step) set.add(v);
  }
  return set;
}

function parseDuration(s) {
  let ms = 0;
  const re = /(\d+(?:\.\d+)?)(h|m|s)/g;
  let m;
  let used = '';
  while ((m = re.exec(s))) { ms += Number(m[1]) * { h: 3600e3, m: 60e3, s: 1e3 }[m[2]]; used += m[0]; }
  if (used !== s || ms < 60e3) throw new Error('an @every duration like 6h or 90m, at least a minute');
  return ms;
}

// nextRuns returns the next n run times (Dates) after from, or throws an
// Error saying what is wrong with the expression or zone.
export function nextRuns(expr, timeZone, n = 5, from = new Date()) {
  expr = expr.trim();
  if (expr.startsWith('@every ')) {
    const d = parseDuration(expr.slice(7).trim());
    return Array.from({ length: n }, (_, i) => new Date(from.getTime() + d * (i + 1)));
  }
  const spec = (DESCRIPTORS[expr] || expr).split(/\s+/);
  if (spec.length !== 5) throw new Error('five fields (minute hour day month weekday) or a descriptor such as @daily');
  const [min, hour, dom, mon, dow] = [
    field(spec[0], 0, 59), field(spec[1], 0, 23), field(spec[2], 1, 31), field(spec[3], 1, 12, MONTHS, 1), field(spec[4], 0, 7, DAYS),
  ];
  if (dow.has(7)) dow.add(0);
  const domAny = spec[2] === '*';
  const dowAny = spec[4] === '*';
  const fmt = new Intl.DateTimeFormat('en-US', { timeZone: timeZone || 'UTC', hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', weekday: 'short' });
  const out = [];
  let t = Math.floor(from.getTime() / 60000) * 60000 + 60000;
  const end = t + 4 * 366 * 86400e3;
  while (out.length < n && t < end) {
    const p = {};
    for (const x of fmt.formatToParts(new Date(t))) p[x.type] = x.value;
    const minute = Number(p.minute);
    const dayOK = (() => {
      const d = dom.has(Number(p.day));
      const w = dow.has(DAYS.indexOf(p.weekday.toUpperCase()));
      if (domAny && dowAny) return true;
      if (domAny) return w;
      if (dowAny) return d;
      return d || w;
    })();
    if (!mon.has(Number(p.month)) || !dayOK || !hour.has(Number(p.hour))) {
      t += (60 - minute) * 60000; // the next hour
      continue;
    }
    if (min.has(minute)) out.push(new Date(t));
    t += 60000;
  }
  if (!out.length) throw new Error('the expression never fires');
  return out;
}
