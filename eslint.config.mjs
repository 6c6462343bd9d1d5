import * as effectEslint from "@effect/eslint-plugin"
import js from "@eslint/js"
import tseslint from "typescript-eslint"

export default tseslint.config(
  {
    ignores: [
      "**/node_modules",
      "**/build",
      "**/dist",
      "**/*.md",
      "bench/results/**",
      "packages/sandbox/test/generated/**"
    ]
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  ...effectEslint.configs.dprint,
  {
    languageOptions: {
      parser: tseslint.parser,
      ecmaVersion: 2022,
      sourceType: "module"
    },
    rules: {
      "no-fallthrough": "off",
      "no-irregular-whitespace": "off",
      "object-shorthand": "error",
      "prefer-destructuring": "off",
      "sort-imports": "off",
      "no-restricted-syntax": [
        "error",
        {
          selector: "CallExpression[callee.property.name='push'] > SpreadElement.arguments",
          message: "Do not use spread arguments in Array.push"
        }
      ],
      "no-unused-vars": "off",
      "require-yield": "off",
      "prefer-rest-params": "off",
      "prefer-spread": "off",
      "@typescript-eslint/array-type": ["warn", { default: "generic", readonly: "generic" }],
      "@typescript-eslint/no-non-null-assertion": "off",
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-empty-object-type": "off",
      "@typescript-eslint/no-unsafe-function-type": "off",
      "@typescript-eslint/no-wrapper-object-types": "off",
      "@typescript-eslint/consistent-type-imports": "warn",
      "@typescript-eslint/no-unused-vars": ["error", { argsIgnorePattern: "^_", varsIgnorePattern: "^_" }],
      "@typescript-eslint/ban-ts-comment": "off",
      "@typescript-eslint/no-namespace": "off",
      "@effect/dprint": [
        "error",
        {
          config: {
            indentWidth: 2,
            lineWidth: 120,
            semiColons: "asi",
            quoteStyle: "alwaysDouble",
            trailingCommas: "never",
            operatorPosition: "maintain",
            "arrowFunction.useParentheses": "force"
          }
        }
      ]
    }
  },
  {
    files: ["**/*.mjs", "scripts/**/*"],
    languageOptions: { globals: { process: "readonly", console: "readonly" } }
  },
  {
    // the checkout example's page script (examples/checkout/): a browser module, no build
    files: ["examples/checkout/**/*.js"],
    languageOptions: {
      globals: Object.fromEntries(
        [
          "document",
          "window",
          "fetch",
          "EventSource",
          "FormData",
          "HTMLElement",
          "HTMLFormElement",
          "performance",
          "setInterval",
          "clearInterval"
        ].map((
          name
        ) => [name, "readonly"])
      )
    }
  },
  {
    // the install test's CommonJS consumer: gcx through require(esm)
    files: ["**/*.cjs"],
    languageOptions: {
      sourceType: "commonjs",
      globals: { require: "readonly", process: "readonly", console: "readonly" }
    },
    rules: { "@typescript-eslint/no-require-imports": "off" }
  },
  {
    files: ["packages/*/src/**/*"],
    rules: {
      "no-console": "error",
      "@effect/no-import-from-barrel-package": ["error", { packageNames: ["effect", "@effect/platform"] }]
    }
  }
)
