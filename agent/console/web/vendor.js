// What the console takes from @dagrejs/dagre: its graph type and the layered layout.
export { graphlib, layout } from "@dagrejs/dagre";
