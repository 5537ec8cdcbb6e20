// typescript-eslint runs only the promise rules, which need the TypeScript checker; Biome does the rest (biome.jsonc).
import tseslint from "typescript-eslint";

export default tseslint.config(
  // The same files tsc checks (tsconfig.json, and src/ui/tsconfig.json for the browser code); bench/compare is outside it and gets Biome's promise rule instead.
  { ignores: ["node_modules/**", "dist/**", "bench/node_modules/**", "bench/compare/**"] },
  {
    files: ["**/*.ts", "**/*.tsx"],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { project: ["./tsconfig.json", "./src/ui/tsconfig.json"], tsconfigRootDir: import.meta.dirname },
    },
    plugins: { "@typescript-eslint": tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/await-thenable": "error",
    },
  },
);
