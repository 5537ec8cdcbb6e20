export { decodeFrameXml, encodeFrameXml, planToXml, type XmlElement } from "./frame-xml.ts";
