import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { restServer, atConsole } from './server.js';

// The layer's tasks as the test sets them: [done, total, remaining, id, status].
let rows = [];
// The tasks page's list by request (seed.json?requests=1).
let requests = [];
let srv;
let live;
let api;
beforeAll(async () => {
  srv = await restServer({
    'GET seed/a.json': () => ({ body: { 'long-array-array': rows } }),
    'GET seed/b.json': () => ({ body: { 'long-array-array': [] } }),
    'GET seed.json': (r) => ({ body: r.query.includes('requests=1') ? { requests } : { 'long-array-array': rows } }),
  });
  atConsole(srv);
  api = await import('../console/api.js');
  live = await import('../console/live.js');
});
afterAll(() => srv.close());

const asked = (path) => srv.requests.filter((r) => r.path === path).length;
const until = async (cond) => { for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 10)); };

describe('live', () => {
  it('asks nothing while a watched layer has no task said to run', async () => {
    const events = [];
    const stop = live.watch('a', (e) => events.push(e));
    await new Promise((r) => setTimeout(r, 50));
    expect(asked('seed/a.json')).toBe(0);
    live.setOverview({ layers: [{ name: 'a', tasks: { running: 0, pending: 0 } }] });
    expect(asked('seed/a.json')).toBe(0);
    stop();
    expect(events).toEqual([]);
  });

  it('follows a kicked layer while its tasks run, hears each change, and once their end', async () => {
    live.timing.every = 40;
    const events = [];
    const stop = live.watch('a', (e) => events.push(e));
    rows = [[10, 100, 5, 7, 1], [0, 100, 5, 8, 0]];
    live.kick('a');
    live.kick('a'); // once followed, a kick asks nothing more
    await until(() => events.length === 1);
    expect(events[0]).toEqual({ layer: 'a', running: true, done: 10 });
    expect(asked('seed/a.json')).toBe(1);
    // No change: no event; a change: one.
    await until(() => asked('seed/a.json') >= 3);
    expect(events.length).toBe(1);
    rows = [[60, 100, 2, 7, 1], [5, 100, 5, 8, 1]];
    await until(() => events.length === 2);
    expect(events[1]).toEqual({ layer: 'a', running: true, done: 65 });
    // Done: one last event, and no more requests.
    rows = [[100, 100, 0, 7, 2]];
    await until(() => events.length === 3);
    expect(events[2]).toEqual({ layer: 'a', running: false, done: 65 });
    const n = asked('seed/a.json');
    await new Promise((r) => setTimeout(r, 200));
    expect(asked('seed/a.json')).toBe(n);
    stop();
  });

  it('learns of a task started elsewhere from the task list another page polls, once', async () => {
    const events = [];
    const stopA = live.watch('a', (e) => events.push(e));
    const stopB = live.watch('b', () => {});
    rows = [[1, 50, 9, 42, 1]];
    const a0 = asked('seed/a.json');
    const b0 = asked('seed/b.json');
    await api.getJSON('seed.json');
    await until(() => events.length === 1);
    expect(events[0]).toMatchObject({ layer: 'a', running: true, done: 1 });
    await until(() => asked('seed/b.json') === b0 + 1);
    expect(asked('seed/b.json')).toBe(b0 + 1); // b has none of them: asked once, then left
    stopA(); // unwatched: no more polls
    const n = asked('seed/a.json');
    expect(n).toBeGreaterThan(a0);
    await api.getJSON('seed.json'); // the same task again: nothing new
    await new Promise((r) => setTimeout(r, 200));
    expect(asked('seed/a.json')).toBe(n);
    expect(asked('seed/b.json')).toBe(b0 + 1);
    stopB();
  });

  it('learns of a task started elsewhere from the list by request, following only its layer', async () => {
    const stopA = live.watch('a', () => {});
    const stopB = live.watch('b', () => {});
    const a0 = asked('seed/a.json');
    const b0 = asked('seed/b.json');
    rows = [[1, 50, 9, 77, 1]];
    requests = [{ layer: 'a', tasks: [{ id: 77, status: 'RUNNING' }] }, { layer: 'b', tasks: [{ id: 78, status: 'DONE' }] }];
    await api.getJSON('seed.json?requests=1');
    await until(() => asked('seed/a.json') > a0);
    expect(asked('seed/a.json')).toBeGreaterThan(a0);
    expect(asked('seed/b.json')).toBe(b0); // b's task has ended: not followed
    stopA();
    stopB();
  });
});
