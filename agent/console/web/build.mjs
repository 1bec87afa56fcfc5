// Builds ../ui/vendor/dagre.js (the layout library the console draws its graph with) and
// its licence file. `make ui` runs it; `make ui-check` checks the committed files match.
import { build } from "esbuild";
import { readFileSync, writeFileSync } from "node:fs";

const out = process.argv[2] || "../ui/vendor";
const pkgs = ["@dagrejs/dagre", "@dagrejs/graphlib"].map((name) => {
  const { version } = JSON.parse(readFileSync(`node_modules/${name}/package.json`, "utf8"));
  return { name, version, license: readFileSync(`node_modules/${name}/LICENSE`, "utf8") };
});
await build({
  entryPoints: ["vendor.js"],
  bundle: true,
  format: "esm",
  minify: true,
  target: "es2020",
  legalComments: "none",
  banner: { js: `/* ${pkgs.map((p) => p.name + " " + p.version).join(", ")}: MIT licence, see dagre.LICENSE.txt */` },
  outfile: `${out}/dagre.js`,
});
writeFileSync(`${out}/dagre.LICENSE.txt`, pkgs.map((p) => `${p.name} ${p.version}\n\n${p.license.trim()}\n`).join("\n"));
