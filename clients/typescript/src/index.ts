// A typed client of seckill's API: the types are generated from the
// contract (api/openapi.yaml, `npm run generate`), the calls are
// openapi-fetch's, so a path, a parameter, a body or an answer that is not
// the contract's is a type error.
import createFetchClient, { type Client } from "openapi-fetch";
import type { components, paths } from "./schema.js";

export type { components, paths };
export type Schemas = components["schemas"];
export type Sale = Schemas["Sale"];
export type Order = Schemas["Order"];
export type ClaimAccepted = Schemas["ClaimAccepted"];
export type Problem = Schemas["Problem"];

export interface ClientOptions {
  /** The API's origin, e.g. http://127.0.0.1:8080. */
  baseUrl: string;
  /** The buyer's bearer token (the shop's identity provider's), read before every call. */
  token?: () => string | undefined | Promise<string | undefined>;
  /** A fetch of your own (tests, retries). */
  fetch?: typeof globalThis.fetch;
}

/** A client of every operation of the contract. */
export function createClient(options: ClientOptions): Client<paths> {
  const client = createFetchClient<paths>({ baseUrl: options.baseUrl, fetch: options.fetch });
  const token = options.token;
  if (token) {
    client.use({
      async onRequest({ request }) {
        const t = await token();
        if (t) request.headers.set("Authorization", `Bearer ${t}`);
        return request;
      },
    });
  }
  return client;
}

/** The problem an answer carries (`application/problem+json`), or undefined. */
export function problemOf(error: unknown): Problem | undefined {
  if (typeof error === "object" && error !== null && "code" in error && "status" in error) {
    return error as Problem;
  }
  return undefined;
}
