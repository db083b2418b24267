export * from './strategy';
export * from './pick';
