import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { restServer, atConsole } from './server.js';

let srv;
let api;
beforeAll(async () => {
  srv = await restServer({
    'GET layers.json': () => ({ body: { layers: ['a'] } }),
    'GET gone.json': () => ({ status: 404, body: 'no such layer: gone\n' }),
    'GET empty': () => ({ status: 500, body: '' }),
    'POST seed/a.json': (r) => ({ body: { got: JSON.parse(r.body) } }),
    'DELETE seed/a.json': () => ({ status: 200, body: '' }),
  });
  atConsole(srv);
  api = await import('../console/api.js');
});
afterAll(() => srv.close());

describe('call', () => {
  it('asks /rest/ beside the console and counts the request', async () => {
    const before = api.stats.requests.length;
    const r = await api.call('GET', 'layers.json');
    expect(r.status).toBe(200);
    expect(JSON.parse(r.text)).toEqual({ layers: ['a'] });
    expect(srv.requests.at(-1)).toMatchObject({ method: 'GET', path: 'layers.json' });
    expect(api.stats.requests.length).toBe(before + 1);
    expect(api.stats.requests.at(-1)).toMatchObject({ method: 'GET', path: 'layers.json' });
    expect(window.consoleStats).toBe(api.stats);
  });

  it('throws the server message with its status, unless ok lists the status', async () => {
    const err = await api.call('GET', 'gone.json').catch((e) => e);
    expect(err).toBeInstanceOf(api.ApiError);
    expect(err.status).toBe(404);
    expect(err.message).toBe('no such layer: gone');
    const r = await api.call('GET', 'gone.json', { ok: [404] });
    expect(r.status).toBe(404);
    expect(await api.getJSON('gone.json', { ok: [404] })).toBeNull();
  });

  it('names the status and path when the server says nothing', async () => {
    await expect(api.call('GET', 'empty')).rejects.toThrow('500 from empty');
  });
});

describe('JSON', () => {
  it('getJSON parses the answer', async () => {
    expect(await api.getJSON('layers.json')).toEqual({ layers: ['a'] });
  });

  it('postJSON sends the value as JSON and parses the answer, or gives null for none', async () => {
    expect(await api.postJSON('seed/a.json', { zoomStart: 0 })).toEqual({ got: { zoomStart: 0 } });
    expect(srv.requests.at(-1)).toMatchObject({ method: 'POST', type: 'application/json', body: '{"zoomStart":0}' });
    expect(await api.postJSON('seed/a.json', {}, 'DELETE')).toBeNull();
  });

  it('enc escapes a path segment', () => {
    expect(api.enc('demo:world/a b')).toBe('demo%3Aworld%2Fa%20b');
  });
});
