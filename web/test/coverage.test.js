import { describe, it, expect } from 'vitest';
import { deepestLevel, legendLabel } from '../console/quota.js';

describe('deepestLevel', () => {
  it('finds the deepest level holding pages, asking from the deepest up, a batch at a time', async () => {
    const asked = [];
    const has = (z) => { asked.push(z); return Promise.resolve(z === 3 || z === 8); };
    expect(await deepestLevel(22, has, 6)).toBe(8);
    // 21..16, then 15..10, then 9..4: never above what it needed.
    expect(asked.sort((a, b) => a - b)).toEqual([4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21]);
  });

  it('is -1 for an empty tile set', async () => {
    expect(await deepestLevel(5, () => Promise.resolve(false), 2)).toBe(-1);
  });
});

describe('legendLabel', () => {
  it('writes bytes, tiles and hits in human units', () => {
    expect(legendLabel('bytes')(1536)).toBe('1.50 KiB');
    expect(legendLabel('bytes')(5 * 1024 * 1024)).toBe('5.00 MiB');
    expect(legendLabel('tiles')(4096)).toBe('4,096 tiles');
    expect(legendLabel('tiles')(1)).toBe('1 tile');
    expect(legendLabel('hits')(12)).toBe('12 hits');
  });
});
