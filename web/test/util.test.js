import { describe, it, expect, vi, afterEach } from 'vitest';
import { el, replace, field, select, setOptions, num, bytes, duration, usd, debounce, say, parseXML, childText, when } from '../console/util.js';

describe('formatting', () => {
  it('num groups thousands and shows a dash for nothing', () => {
    expect(num(1234567)).toBe('1,234,567');
    expect(num(0)).toBe('0');
    expect(num(null)).toBe('–');
    expect(num(undefined)).toBe('–');
  });

  it('bytes picks the binary unit and its precision', () => {
    expect(bytes(0)).toBe('0 B');
    expect(bytes(1023)).toBe('1023 B');
    expect(bytes(1024)).toBe('1.00 KiB');
    expect(bytes(1536)).toBe('1.50 KiB');
    expect(bytes(10 * 1024)).toBe('10.0 KiB');
    expect(bytes(5 * 1024 ** 3)).toBe('5.00 GiB');
    expect(bytes(2048 * 1024 ** 5)).toBe('2048.0 PiB');
    expect(bytes(-2048)).toBe('-2.00 KiB');
    expect(bytes(null)).toBe('–');
  });

  it('duration rounds to the second and names two units', () => {
    expect(duration(0)).toBe('0 s');
    expect(duration(59.4)).toBe('59 s');
    expect(duration(59.6)).toBe('1 min 0 s');
    expect(duration(3599)).toBe('59 min 59 s');
    expect(duration(3600 + 120)).toBe('1 h 2 min');
    expect(duration(2 * 86400 + 5 * 3600 + 59)).toBe('2 d 5 h');
    expect(duration(-1)).toBe('–');
    expect(duration(Infinity)).toBe('–');
    expect(duration(NaN)).toBe('–');
  });

  it('usd shows cents, and two significant digits below a cent', () => {
    expect(usd(0)).toBe('$0.00');
    expect(usd(12.345)).toBe('$12.35');
    expect(usd(0.004567)).toBe('$0.0046');
    expect(usd(null)).toBe('–');
  });

  it('when shows a server time to the second in UTC, in a <time>', () => {
    const t = when('2026-12-02T03:04:05.123456Z');
    expect(t.tagName).toBe('TIME');
    expect(t.dateTime).toBe('2026-12-02T03:04:05.123456Z');
    expect(t.textContent).toBe('2026-12-02 03:04:05Z');
    expect(when('')).toBe('–');
  });
});

describe('debounce', () => {
  afterEach(() => vi.useRealTimers());

  it('calls once, with the last arguments, ms after the last call', () => {
    vi.useFakeTimers();
    const fn = vi.fn();
    const d = debounce(fn, 300);
    d(1);
    vi.advanceTimersByTime(200);
    d(2);
    vi.advanceTimersByTime(299);
    expect(fn).not.toHaveBeenCalled();
    vi.advanceTimersByTime(1);
    expect(fn).toHaveBeenCalledTimes(1);
    expect(fn).toHaveBeenCalledWith(2);
  });
});

describe('elements', () => {
  it('el sets properties, attributes, listeners and text children, never HTML', () => {
    const click = vi.fn();
    const e = el('button', { class: 'danger', type: 'button', dataset: { id: '7' }, 'aria-label': 'Kill', disabled: true, hidden: false, title: null, onclick: click },
      'a <b>', 3, null, [el('span', { text: 'x' })]);
    expect(e.className).toBe('danger');
    expect(e.type).toBe('button');
    expect(e.dataset.id).toBe('7');
    expect(e.getAttribute('aria-label')).toBe('Kill');
    expect(e.disabled).toBe(true);
    expect(e.hasAttribute('hidden')).toBe(false);
    expect(e.hasAttribute('title')).toBe(false);
    expect(e.textContent).toBe('a <b>3x');
    expect(e.querySelector('b')).toBeNull();
    e.dispatchEvent(new Event('click'));
    expect(click).toHaveBeenCalledTimes(1);
  });

  it('replace empties an element and appends the new children', () => {
    const e = el('div', null, 'old', el('i'));
    expect(replace(e, 'new', ['er'])).toBe(e);
    expect(e.childNodes.length).toBe(2);
    expect(e.textContent).toBe('newer');
  });

  it('field labels its control and ties the hint to it', () => {
    const input = el('input');
    const f = field('Zoom', input, 'levels 0-20');
    expect(f.className).toBe('field');
    expect(input.id).not.toBe('');
    expect(f.querySelector('label').htmlFor).toBe(input.id);
    expect(f.querySelector('label').textContent).toBe('Zoom');
    const hint = f.querySelector('small');
    expect(input.getAttribute('aria-describedby')).toBe(hint.id);
    expect(hint.textContent).toBe('levels 0-20');
    expect(field('Other', el('input')).querySelector('small')).toBeNull();
  });

  it('setOptions keeps the value when it is still offered', () => {
    const s = select([['a', 'A'], ['b', 'B'], 'c'], 'b');
    expect([...s.options].map((o) => [o.value, o.textContent])).toEqual([['a', 'A'], ['b', 'B'], ['c', 'c']]);
    expect(s.value).toBe('b');
    setOptions(s, ['c', 'b']);
    expect(s.value).toBe('b');
    setOptions(s, ['x', 'y']);
    expect(s.value).toBe('x');
  });

  it('say shows a message in the status line, marked when it is an error', () => {
    document.body.replaceChildren(el('p', { id: 'status' }));
    say('seeding', false);
    expect(document.getElementById('status').textContent).toBe('seeding');
    expect(document.getElementById('status').className).toBe('');
    say('403 Forbidden', true);
    expect(document.getElementById('status').className).toBe('error');
  });
});

describe('XML', () => {
  it('parseXML parses XML and refuses what is not', () => {
    const d = parseXML('<layer><name> demo:world </name><title>World</title><x><name>inner</name></x></layer>');
    expect(childText(d.documentElement, 'name')).toBe('demo:world');
    expect(childText(d.documentElement, 'title')).toBe('World');
    expect(childText(d.documentElement, 'absent')).toBe('');
    expect(() => parseXML('<layer><name></layer>')).toThrow('the server sent malformed XML');
  });
});
