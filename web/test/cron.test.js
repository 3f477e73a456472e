import { describe, it, expect } from 'vitest';
import { nextRuns } from '../console/cron.js';

const iso = (dates) => dates.map((d) => d.toISOString().replace(':00.000Z', 'Z'));
const at = (s) => new Date(s);

describe('nextRuns', () => {
  it('steps through the minutes after from, never from itself', () => {
    expect(iso(nextRuns('*/15 * * * *', 'UTC', 3, at('2026-01-01T00:07:30Z')))).toEqual(['2026-01-01T00:15Z', '2026-01-01T00:30Z', '2026-01-01T00:45Z']);
    expect(iso(nextRuns('*/15 * * * *', 'UTC', 1, at('2026-01-01T00:15:00Z')))).toEqual(['2026-01-01T00:30Z']);
    expect(iso(nextRuns('5/20 * * * *', 'UTC', 4, at('2026-01-01T00:00:00Z')))).toEqual(['2026-01-01T00:05Z', '2026-01-01T00:25Z', '2026-01-01T00:45Z', '2026-01-01T01:05Z']);
  });

  it('gives five runs by default and reads the descriptors', () => {
    const runs = nextRuns('@daily', 'UTC', undefined, at('2026-03-10T12:00:00Z'));
    expect(iso(runs)).toEqual(['2026-03-11T00:00Z', '2026-03-12T00:00Z', '2026-03-13T00:00Z', '2026-03-14T00:00Z', '2026-03-15T00:00Z']);
    expect(iso(nextRuns('@hourly', 'UTC', 2, at('2026-03-10T12:00:00Z')))).toEqual(['2026-03-10T13:00Z', '2026-03-10T14:00Z']);
    expect(iso(nextRuns('@monthly', 'UTC', 2, at('2026-03-10T12:00:00Z')))).toEqual(['2026-04-01T00:00Z', '2026-05-01T00:00Z']);
    expect(iso(nextRuns('  @yearly ', 'UTC', 1, at('2026-03-10T12:00:00Z')))).toEqual(['2027-01-01T00:00Z']);
  });

  it('counts in the schedule time zone, across a change of summer time', () => {
    // Paris moves from UTC+1 to UTC+2 on 29 March 2026.
    expect(iso(nextRuns('0 9 * * *', 'Europe/Paris', 3, at('2026-03-27T00:00:00Z')))).toEqual(['2026-03-27T08:00Z', '2026-03-28T08:00Z', '2026-03-29T07:00Z']);
    expect(iso(nextRuns('0 9 * * *', '', 1, at('2026-03-27T00:00:00Z')))).toEqual(['2026-03-27T09:00Z']);
  });

  it('fires on either the day of the month or the weekday when both are given, as cron does', () => {
    expect(iso(nextRuns('0 0 1 * MON', 'UTC', 5, at('2026-02-01T00:00:00Z')))).toEqual(['2026-02-02T00:00Z', '2026-02-09T00:00Z', '2026-02-16T00:00Z', '2026-02-23T00:00Z', '2026-03-01T00:00Z']);
    expect(iso(nextRuns('0 0 1 * *', 'UTC', 2, at('2026-02-01T00:00:00Z')))).toEqual(['2026-03-01T00:00Z', '2026-04-01T00:00Z']);
    expect(iso(nextRuns('0 0 * * mon', 'UTC', 2, at('2026-02-01T00:00:00Z')))).toEqual(['2026-02-02T00:00Z', '2026-02-09T00:00Z']);
  });

  it('reads month names, ranges with steps, lists, and 7 as Sunday', () => {
    expect(iso(nextRuns('30 6 * JAN-MAR/2 *', 'UTC', 2, at('2026-01-31T12:00:00Z')))).toEqual(['2026-03-01T06:30Z', '2026-03-02T06:30Z']);
    expect(iso(nextRuns('0 12 * * 7', 'UTC', 1, at('2026-02-01T13:00:00Z')))).toEqual(['2026-02-08T12:00Z']);
    expect(iso(nextRuns('0 8,20 * * *', 'UTC', 3, at('2026-02-01T09:00:00Z')))).toEqual(['2026-02-01T20:00Z', '2026-02-02T08:00Z', '2026-02-02T20:00Z']);
  });

  it('reads @every durations of a minute or more', () => {
    const from = at('2026-02-01T09:00:30Z');
    expect(iso(nextRuns('@every 90m', 'UTC', 2, from))).toEqual(['2026-02-01T10:30:30.000Z', '2026-02-01T12:00:30.000Z']);
    expect(nextRuns('@every 1h30m', 'UTC', 1, from)[0].getTime() - from.getTime()).toBe(90 * 60e3);
    expect(() => nextRuns('@every 30s', 'UTC')).toThrow('at least a minute');
    expect(() => nextRuns('@every 6 hours', 'UTC')).toThrow('an @every duration');
  });

  it('says what is wrong with an expression', () => {
    expect(() => nextRuns('* * * *', 'UTC')).toThrow('five fields');
    expect(() => nextRuns('60 * * * *', 'UTC')).toThrow('60 is out of 0-59');
    expect(() => nextRuns('0 0 * FOO *', 'UTC')).toThrow('FOO is out of 1-12');
    expect(() => nextRuns('*/0 * * * *', 'UTC')).toThrow('bad step in */0');
    expect(() => nextRuns('5-1 * * * *', 'UTC')).toThrow('bad range 5-1');
    expect(() => nextRuns('0 0 31 2 *', 'UTC', 1, at('2026-01-01T00:00:00Z'))).toThrow('the expression never fires');
    expect(() => nextRuns('0 0 * * *', 'Mars/Olympus')).toThrow(RangeError);
  });
});
