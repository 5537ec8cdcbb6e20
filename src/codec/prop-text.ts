/**
 * Prop values as XML attribute text. Plain strings are written as-is; everything else (numbers,
 * booleans, null, arrays, objects, and strings an XML parser would not hand back unchanged) is
 * written as the marker followed by JSON text that holds only characters XML 1.0 carries faithfully.
 */
import { SmithersError } from "../errors/index.ts";
import { PROP_JSON_MARKER } from "./constants.ts";
import type { PropValue } from "./tree.ts";

// Characters every XML 1.0 parser returns unchanged inside an attribute: no C0/C1 controls (tabs and
// newlines are normalised to spaces), no U+2028/2029 (XML 1.1 line ends), no lone surrogates, no U+FFFE/FFFF.
const CARRIED_AS_IS = /^(?:[\x20-\x7E\xA0-\u2027\u202A-\uD7FF\uE000-\uFFFD]|[\uD800-\uDBFF][\uDC00-\uDFFF])*$/;

// JSON.stringify already escapes C0 controls and lone surrogates; these it leaves raw.
const JSON_UNSAFE = /[\x7F-\x9F\u2028\u2029\uFFFE\uFFFF]/g;
const unicodeEscape = (ch: string) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, "0")}`;

/**
 * Printable ASCII only, the commonest prop text (ids, states, table names): carried as is, known
 * without CARRIED_AS_IS, whose first use in a process compiles it (a first run's first frame).
 */
function printableAscii(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

export function encodePropValue(value: PropValue): string {
  if (typeof value === "string" && !value.startsWith(PROP_JSON_MARKER) && (printableAscii(value) || CARRIED_AS_IS.test(value))) return value;
  // A finite number's or a boolean's JSON text is its String() text, all ASCII: nothing to escape.
  if ((typeof value === "number" && Number.isFinite(value)) || typeof value === "boolean") return PROP_JSON_MARKER + String(value);
  return PROP_JSON_MARKER + JSON.stringify(value).replace(JSON_UNSAFE, unicodeEscape);
}

export function decodePropValue(text: string, name: string): PropValue {
  if (!text.startsWith(PROP_JSON_MARKER)) return text;
  try {
    return JSON.parse(text.slice(PROP_JSON_MARKER.length)) as PropValue;
  } catch (cause) {
    throw new SmithersError("INVALID_FRAME", `Frame attribute ${name} is not valid JSON after ${PROP_JSON_MARKER}`, { cause });
  }
}
