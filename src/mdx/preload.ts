/** Preload module (bunfig.toml `preload`): `.mdx` files import as smithers prompt components. */
import { registerMdx } from "./index.ts";

registerMdx();
