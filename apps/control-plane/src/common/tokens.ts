export const LOAD_STORE = Symbol('LOAD_STORE');
export const CONTROL_PLANE_CONFIG = Symbol('CONTROL_PLANE_CONFIG');
