/**
 * The sandbox's icon, an inline SVG served at `/favicon.ico`, where browsers
 * ask for one by default (the docs page) and where the dashboard points: no
 * page of the sandbox gets a 404 for it.
 */
import * as HttpRouter from "effect/http/HttpRouter"
import * as HttpServerResponse from "effect/http/HttpServerResponse"
import { extraPaths } from "./routes.js"

/** The icon: a card on the dashboard's header colour. */
export const svg = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">` +
  `<rect width="32" height="32" rx="6" fill="#1d2330"/>` +
  `<rect x="5" y="9" width="22" height="15" rx="2" fill="#1f5fbf"/>` +
  `<rect x="5" y="13" width="22" height="3" fill="#f0b400"/></svg>`

/** Serves the icon at `/favicon.ico` (as `image/svg+xml`, cached for a day). */
export const layer = HttpRouter.add(
  "GET",
  extraPaths.favicon,
  HttpServerResponse.text(svg, {
    contentType: "image/svg+xml",
    headers: { "cache-control": "public, max-age=86400", "x-content-type-options": "nosniff" }
  })
)
