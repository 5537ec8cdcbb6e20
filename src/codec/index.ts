export { applyDelta } from "./apply.ts";
export { FRAME_MAX_DEPTH } from "./constants.ts";
export { decodeDelta, decodeDeltaText, encodeDeltaText } from "./delta-text.ts";
export { encodeDelta } from "./diff.ts";
export { frameHash } from "./hash.ts";
export { LiveFrame } from "./live-frame.ts";
export {
  opSchemas,
  decodeDeltaJson,
  encodeDeltaJson,
  type FrameDelta,
  type FrameOp,
  type FrameOpKind,
} from "./ops.ts";
export { planToXml, type PlanXml, type PlanXmlOptions } from "./plan-xml.ts";
export { treeSchemas, isXmlName, type PropValue, type XmlElement } from "./tree.ts";
export { decodeFrameXml, encodeFrameXml } from "./xml.ts";
