/** Routing strategies, by canonical name. */
export const STRATEGIES = ['least_load', 'round_robin', 'random', 'power_of_two'] as const;
export type Strategy = (typeof STRATEGIES)[number];

const ALIASES: Record<string, Strategy> = {
  least_load: 'least_load',
  'least-load': 'least_load',
  ll: 'least_load',
  round_robin: 'round_robin',
  'round-robin': 'round_robin',
  rr: 'round_robin',
  random: 'random',
  power_of_two: 'power_of_two',
  'power-of-two': 'power_of_two',
  p2c: 'power_of_two',
};

export const STRATEGY_NAMES = Object.keys(ALIASES);

/** Canonical strategy for a name or alias, or undefined when unknown. */
export function parseStrategy(name: string): Strategy | undefined {
  return ALIASES[name.trim().toLowerCase()];
}
