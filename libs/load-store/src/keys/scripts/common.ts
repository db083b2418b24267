import { EPSILON, WINDOW_MS } from '../key-names';

/** Shared by the key scripts: the store's clock (every proxy and control plane share it) and the window. */
export const KEY_SCRIPT_COMMON = `
local W, EPS = ${WINDOW_MS}, ${EPSILON}
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
`;
