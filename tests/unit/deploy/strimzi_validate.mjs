// Validate Strimzi custom resources against Strimzi's own CRD schemas, as compiled into the
// @kubernetes-models/strimzi-kafka-operator package (installed by tests/unit/deploy/tooling.py).
// Usage: node strimzi_validate.mjs <node_modules dir>  < resources.json   ->  [{"ok": bool, "error": str}]
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const modules = join(process.argv[2], "@kubernetes-models", "strimzi-kafka-operator");
const resources = JSON.parse(readFileSync(0, "utf8"));
const results = [];
for (const resource of resources) {
  const [group, version] = String(resource.apiVersion).split("/");
  const file = join(modules, group, version ?? "", `${resource.kind}.js`);
  if (!existsSync(file)) {
    results.push({ ok: false, error: `no schema for ${resource.apiVersion} ${resource.kind}` });
    continue;
  }
  const Model = (await import(pathToFileURL(file).href))[resource.kind];
  try {
    new Model(resource).validate();
    results.push({ ok: true, error: "" });
  } catch (err) {
    results.push({ ok: false, error: String(err.message ?? err) });
  }
}
process.stdout.write(JSON.stringify(results));
