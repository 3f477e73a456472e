import { describe, it, expect, beforeAll, afterAll, vi } from 'vitest';
import { restServer, atConsole } from './server.js';

// The tile token's requests and renewals, timed on fake timers (only
// setTimeout and clearTimeout: the requests to the test's server are real).
let srv;
let tt;
let api;
let issued = 0;
const refuse = [];
beforeAll(async () => {
  srv = await restServer({
    'POST tiletokens.json': (r) => {
      if (refuse.length) return { status: 403, body: refuse.shift() + '\n' };
      const { layers, lifetime } = JSON.parse(r.body);
      issued++;
      return { body: { token: `tok ${issued}/${layers.join('+')}`, expiresAt: 1e9 + lifetime } };
    },
  });
  atConsole(srv);
  document.body.innerHTML = '<p id="status"></p>';
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  api = await import('../console/api.js');
  tt = await import('../console/tiletoken.js');
});
afterAll(() => {
  vi.useRealTimers();
  return srv.close();
});

// changed resolves with the state at the token's next change.
const changed = () => new Promise((resolve) => { const off = tt.onChange((s) => { off(); resolve({ ...s }); }); });
const sent = () => api.stats.requests.filter((r) => r.path === 'tiletokens.json').length;
const lastAsked = () => JSON.parse(srv.requests.at(-1).body);
const layers = [{ name: 'pub' }, { name: 'p1', private: true }, { name: 'p2', private: true }];

describe('tile token', () => {
  it('is asked for the private layers and added to their tile URLs only', async () => {
    const state = window.consoleTileToken;
    state.lifetime = 100;
    const next = changed();
    tt.setLayers(layers, null);
    const s = await next;
    expect(lastAsked()).toEqual({ layers: ['p1', 'p2'], lifetime: 100 });
    expect(s).toMatchObject({ token: 'tok 1/p1+p2', layers: ['p1', 'p2'], expiresAt: 1e9 + 100, issued: 1, error: '' });
    expect(tt.isPrivate('p1')).toBe(true);
    expect(tt.isPrivate('pub')).toBe(false);
    expect(tt.tokenFor('pub')).toBe('');
    expect(tt.tokenFor('p2')).toBe('tok 1/p1+p2');
    expect(tt.withToken('/tiles/pub/0/0/0.png', 'pub')).toBe('/tiles/pub/0/0/0.png');
    expect(tt.withToken('/tiles/p1/0/0/0.png', 'p1')).toBe('/tiles/p1/0/0/0.png?token=tok%201%2Fp1%2Bp2');
    expect(tt.withToken('/wmts?layer=p1', 'p1')).toBe('/wmts?layer=p1&token=tok%201%2Fp1%2Bp2');
  });

  it('is renewed when a fifth of its lifetime is left', async () => {
    const before = sent();
    vi.advanceTimersByTime(79_999);
    expect(sent()).toBe(before);
    const next = changed();
    vi.advanceTimersByTime(1);
    expect(sent()).toBe(before + 1);
    expect(await next).toMatchObject({ token: 'tok 2/p1+p2', issued: 2 });
  });

  it('is not asked again while the private layers are the same', () => {
    const before = sent();
    tt.setLayers([...layers].reverse(), null);
    expect(sent()).toBe(before);
  });

  it('is asked at once, for the layers a limited account may see, when they change', async () => {
    const next = changed();
    tt.setLayers(layers, ['p1', 'pub']);
    const s = await next;
    expect(lastAsked().layers).toEqual(['p1']);
    expect(s.token).toBe('tok 3/p1');
    expect(tt.tokenFor('p1')).toBe('tok 3/p1');
    expect(tt.tokenFor('p2')).toBeNull();
    expect(tt.withToken('/tiles/p2/0/0/0.png', 'p2')).toBe('/tiles/p2/0/0/0.png');
  });

  it('says a refusal in the status line and asks again a minute later', async () => {
    refuse.push('layer p2: not yours');
    let next = changed();
    tt.setLayers(layers, ['p2']);
    let s = await next;
    expect(s.error).toBe('layer p2: not yours');
    expect(s.issued).toBe(3);
    const status = document.getElementById('status');
    expect(status.textContent).toBe('Tile token for the private layers (p2): layer p2: not yours; their tiles are not shown');
    expect(status.className).toBe('error');
    expect(tt.tokenFor('p2')).toBeNull();
    const before = sent();
    vi.advanceTimersByTime(59_999);
    expect(sent()).toBe(before);
    next = changed();
    vi.advanceTimersByTime(1);
    s = await next;
    expect(sent()).toBe(before + 1);
    expect(s).toMatchObject({ token: 'tok 4/p2', layers: ['p2'], error: '' });
  });

  it('is dropped, without a request, when no private layer is left', async () => {
    const before = sent();
    const next = changed();
    tt.setLayers([{ name: 'pub' }, { name: 'p1' }], null);
    expect(await next).toMatchObject({ token: '', layers: [], expiresAt: 0 });
    expect(sent()).toBe(before);
    expect(tt.isPrivate('p1')).toBe(false);
    expect(tt.tokenFor('p1')).toBe('');
    // No renewal is left waiting.
    vi.advanceTimersByTime(3600_000);
    expect(sent()).toBe(before);
  });
});
