/** Limits and markers of the frame formats; changing any of them changes what stored frames mean. */

/** Deepest element nesting a frame may have (fast-xml-parser refuses deeper documents by default). */
export const FRAME_MAX_DEPTH = 256;

/** First character of an attribute written as JSON text instead of the plain string. */
export const PROP_JSON_MARKER = "=";

/** Pieces per chunk of a keyframe's XML text while it is written (a few kilobytes of it). */
export const XML_CHUNK_PARTS = 1024;
