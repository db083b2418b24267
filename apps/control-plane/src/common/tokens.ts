export const LOAD_STORE = Symbol('LOAD_STORE');
export const CONTROL_PLANE_CONFIG = Symbol('CONTROL_PLANE_CONFIG');
/** Instances declared in the config file and INSTANCES, registered at start. */
export const DECLARED_INSTANCES = Symbol('DECLARED_INSTANCES');
