// The typed client against a running `seckill dev` (SECKILL_API_URL): a
// buyer signs in with the dev sign-in, claims a unit of the demo sale,
// pays it with the dev payment provider and reads the order PAID; a
// second claim is refused with its typed problem. Run by app's
// TestTypeScriptClient (make test), or by hand: `seckill dev`, then
// `SECKILL_API_URL=http://127.0.0.1:8080 npm test`.
import assert from "node:assert/strict";
import { test } from "node:test";

import { createClient, problemOf, type Order } from "./index.js";

const baseUrl = process.env.SECKILL_API_URL;
if (!baseUrl) throw new Error("SECKILL_API_URL is not set: the address of a running `seckill dev`");

async function until<T>(what: string, read: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = await read();
    if (got !== undefined) return got;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

test("claim, pay with the dev provider, read the order", async () => {
  const anonymous = createClient({ baseUrl });
  const user = `ts-client-${process.pid}-${Date.now()}`;
  const signIn = await anonymous.POST("/dev/sign-in", { body: { user_id: user } });
  assert.equal(signIn.response.status, 200, JSON.stringify(signIn.error));
  const token = signIn.data!.token;
  const api = createClient({ baseUrl, token: () => token });

  const list = await api.GET("/api/v1/sales", { params: { query: { limit: 50 } } });
  assert.equal(list.response.status, 200);
  const sale = list.data!.sales.find((s) => s.state === "ACTIVE" && s.stock.remaining > 0);
  assert.ok(sale, "an open sale with units left (seckill dev opens a demo sale)");
  assert.equal(typeof sale.id, "string", "ids are strings");

  const claim = await api.POST("/api/v1/sales/{id}/claims", { params: { path: { id: sale.id } } });
  assert.equal(claim.response.status, 202, JSON.stringify(claim.error));
  const orderId = claim.data!.order_id;
  assert.equal(claim.response.headers.get("Location"), `/api/v1/orders/${orderId}`);

  const again = await api.POST("/api/v1/sales/{id}/claims", { params: { path: { id: sale.id } } });
  assert.equal(again.response.status, 409);
  const refused = problemOf(again.error);
  assert.equal(refused?.code, "ALREADY_CLAIMED");

  const read = async (): Promise<Order> => {
    const o = await api.GET("/api/v1/orders/{id}", { params: { path: { id: orderId } } });
    assert.equal(o.response.status, 200, JSON.stringify(o.error));
    return o.data!;
  };
  await until("the order to await payment", async () => ((await read()).status === "AWAITING_PAYMENT" ? true : undefined));

  const paid = await api.POST("/dev/checkout/{id}", { params: { path: { id: orderId } }, body: { outcome: "succeeded" } });
  assert.equal(paid.response.status, 200, JSON.stringify(paid.error));
  assert.equal(paid.data!.order_id, orderId);

  const order = await until("the order to be paid", async () => {
    const o = await read();
    return o.status === "PAID" ? o : undefined;
  });
  assert.equal(order.order_id, orderId);
  assert.equal(order.sale_id, sale.id);
});
