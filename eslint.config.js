// Module boundaries of DESIGN.md: apps are thin, logic lives in libs, libs never import apps.
const nx = require('@nx/eslint-plugin');
const tseslint = require('typescript-eslint');

module.exports = [
  { ignores: ['**/node_modules/**', '**/dist/**', '.nx/**'] },
  {
    files: ['**/*.ts'],
    languageOptions: { parser: tseslint.parser },
    plugins: { '@nx': nx },
    rules: {
      '@nx/enforce-module-boundaries': [
        'error',
        {
          allow: [],
          depConstraints: [
            { sourceTag: 'type:lib', onlyDependOnLibsWithTags: ['type:lib'] },
            { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:lib'] },
            { sourceTag: 'type:e2e', onlyDependOnLibsWithTags: ['type:lib'] },
            { sourceTag: 'scope:contracts', onlyDependOnLibsWithTags: [] },
            { sourceTag: 'scope:config', onlyDependOnLibsWithTags: ['scope:contracts'] },
            { sourceTag: 'scope:routing', onlyDependOnLibsWithTags: ['scope:contracts'] },
            { sourceTag: 'scope:load-store', onlyDependOnLibsWithTags: ['scope:contracts', 'scope:routing', 'scope:testing'] },
            { sourceTag: 'scope:sim', onlyDependOnLibsWithTags: ['scope:contracts', 'scope:config', 'scope:engines'] },
            { sourceTag: 'scope:engines', onlyDependOnLibsWithTags: ['scope:contracts'] },
            { sourceTag: 'scope:nest-common', onlyDependOnLibsWithTags: ['scope:contracts'] },
            { sourceTag: 'scope:cli-core', onlyDependOnLibsWithTags: ['scope:contracts'] },
            { sourceTag: 'scope:entry-point', onlyDependOnLibsWithTags: [] },
            { sourceTag: 'scope:proxy-core', onlyDependOnLibsWithTags: ['scope:contracts', 'scope:routing', 'scope:load-store', 'scope:config', 'scope:nest-common', 'scope:testing'] },
          ],
        },
      ],
    },
  },
];
