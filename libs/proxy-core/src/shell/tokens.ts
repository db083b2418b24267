export const PROXY_RUNTIME = Symbol('PROXY_RUNTIME');
