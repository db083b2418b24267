// Validates Kubernetes objects against the API's OpenAPI schemas with kubernetes-models (an ES
// module, so it runs here as a child of the Jest suite). Input: JSON array of objects on stdin.
// Output: JSON array, per object, of `null` (valid) or the validation message.
import * as models from 'kubernetes-models';

const groupKey = (group) => group.replace(/\.(\w)/g, (_, c) => c.toUpperCase()).replace(/^(\w)/, (c) => c.toLowerCase());

function modelOf({ apiVersion, kind }) {
  const [group, version] = apiVersion.includes('/') ? apiVersion.split('/') : [undefined, apiVersion];
  const versions = group ? models[groupKey(group)] : models;
  return versions?.[version]?.[kind];
}

let input = '';
for await (const chunk of process.stdin) input += chunk;
const results = JSON.parse(input).map((obj) => {
  const Model = modelOf(obj);
  if (!Model) return `no schema for ${obj.apiVersion} ${obj.kind}`;
  try {
    new Model(obj).validate();
    return null;
  } catch (err) {
    return err.message;
  }
});
process.stdout.write(JSON.stringify(results));
