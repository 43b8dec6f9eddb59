// Smoke test of the official JavaScript SDK (@azure/cosmos) against a
// running `ebb serve`: a database, a container with defaultTtl, item CRUD, a
// parameterized query, and an item that expires on time (gone from reads and
// queries once its _ts + ttl has passed).
//
// Usage: EBB_ENDPOINT=https://127.0.0.1:8081/ node smoke.mjs
// EBB_KEY defaults to the emulator's well-known key. The server's certificate
// is self-signed, so the client skips verification, as the SDKs' own emulator
// tests do. Exit status 0 on success; otherwise the failing step is printed.
import https from "node:https";
import assert from "node:assert/strict";
import { CosmosClient } from "@azure/cosmos";

const endpoint = process.env.EBB_ENDPOINT || "https://localhost:8081/";
const key =
  process.env.EBB_KEY ||
  "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";

const client = new CosmosClient({
  endpoint,
  key,
  agent: new https.Agent({ rejectUnauthorized: false }),
});

let step = "start";
function log(msg) {
  console.log(`js smoke: ${msg}`);
}

// statusOf runs fn and returns the HTTP status of the error it throws, or of
// its response when it does not throw.
async function statusOf(fn) {
  try {
    const r = await fn();
    return r.statusCode;
  } catch (e) {
    if (e && typeof e.code === "number") return e.code;
    throw e;
  }
}

// sleepUntil waits until the wall clock reaches unixSeconds.
async function sleepUntil(unixSeconds) {
  const ms = unixSeconds * 1000 - Date.now();
  if (ms > 0) await new Promise((r) => setTimeout(r, ms + 50));
}

async function ids(container, query, parameters) {
  const { resources } = await container.items
    .query({ query, parameters: parameters || [] })
    .fetchAll();
  return resources.map((d) => (typeof d === "string" ? d : d.id)).sort();
}

async function main() {
  step = "create database";
  const { database, statusCode: dbStatus } = await client.databases.create({ id: "jsSmoke" });
  assert.equal(dbStatus, 201, "database create status");

  step = "create container with defaultTtl";
  const { container, resource: cprops } = await database.containers.create({
    id: "items",
    partitionKey: { paths: ["/pk"] },
    defaultTtl: 3600,
  });
  assert.equal(cprops.defaultTtl, 3600, "container defaultTtl echoed");
  const { resource: cread } = await container.read();
  assert.equal(cread.defaultTtl, 3600, "container defaultTtl read back");
  assert.deepEqual(cread.partitionKey.paths, ["/pk"]);

  step = "create items";
  const created = await container.items.create({ id: "a", pk: "p1", n: 1 });
  assert.equal(created.statusCode, 201);
  assert.ok(created.resource._etag, "created item has _etag");
  assert.ok(created.resource._ts > 0, "created item has _ts");
  await container.items.create({ id: "a", pk: "p2", n: 2 });
  await container.items.create({ id: "b", pk: "p1", n: 3 });
  assert.equal(
    await statusOf(() => container.items.create({ id: "a", pk: "p1", n: 9 })),
    409,
    "duplicate create conflicts",
  );

  step = "read";
  const { resource: a1 } = await container.item("a", "p1").read();
  assert.equal(a1.n, 1);
  const { resource: a2 } = await container.item("a", "p2").read();
  assert.equal(a2.n, 2, "same id, other partition");
  assert.equal(await statusOf(() => container.item("zz", "p1").read()), 404);

  step = "replace with If-Match";
  const { resource: rep } = await container
    .item("a", "p1")
    .replace({ id: "a", pk: "p1", n: 10 }, { accessCondition: { type: "IfMatch", condition: a1._etag } });
  assert.equal(rep.n, 10);
  assert.equal(
    await statusOf(() =>
      container
        .item("a", "p1")
        .replace({ id: "a", pk: "p1", n: 11 }, { accessCondition: { type: "IfMatch", condition: a1._etag } }),
    ),
    412,
    "stale If-Match is refused",
  );

  step = "upsert";
  const up1 = await container.items.upsert({ id: "c", pk: "p2", n: 4 });
  assert.equal(up1.statusCode, 201, "upsert of a new item creates");
  const up2 = await container.items.upsert({ id: "c", pk: "p2", n: 5 });
  assert.equal(up2.statusCode, 200, "upsert of an existing item replaces");

  step = "patch";
  const { resource: patched } = await container
    .item("b", "p1")
    .patch([{ op: "incr", path: "/n", value: 2 }, { op: "add", path: "/tag", value: "x" }]);
  assert.equal(patched.n, 5);
  assert.equal(patched.tag, "x");

  step = "query";
  assert.deepEqual(
    await ids(container, "SELECT * FROM c WHERE c.pk = @pk", [{ name: "@pk", value: "p1" }]),
    ["a", "b"],
  );
  const { resources: ns } = await container.items
    .query("SELECT VALUE c.n FROM c WHERE c.pk = 'p2' ORDER BY c.n", { partitionKey: "p2" })
    .fetchAll();
  assert.deepEqual(ns, [2, 5]);

  step = "delete";
  const del = await container.item("c", "p2").delete();
  assert.equal(del.statusCode, 204);
  assert.equal(await statusOf(() => container.item("c", "p2").read()), 404);

  step = "expiry";
  const { container: short } = await database.containers.create({
    id: "short",
    partitionKey: { paths: ["/pk"] },
    defaultTtl: 1,
  });
  const { resource: e1 } = await short.items.create({ id: "e1", pk: "p" });
  const { resource: keep } = await short.items.create({ id: "keep", pk: "p", ttl: -1 });
  assert.equal(keep.ttl, -1);
  await sleepUntil(e1._ts + 1);
  assert.equal(await statusOf(() => short.item("e1", "p").read()), 404, "expired item is gone from reads");
  assert.deepEqual(await ids(short, "SELECT * FROM c"), ["keep"], "expired item is gone from queries");
  const { resource: stillThere } = await short.item("keep", "p").read();
  assert.equal(stillThere.id, "keep");

  step = "invalid ttl";
  let err;
  try {
    await short.items.create({ id: "bad", pk: "p", ttl: 0 });
  } catch (e) {
    err = e;
  }
  assert.ok(err, "ttl 0 is refused");
  assert.equal(err.code, 400);
  assert.match(
    String(err.message),
    /The input ttl '0' is invalid\. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire\./,
  );

  step = "delete database";
  await database.delete();
  assert.equal(await statusOf(() => database.read()), 404);
  log("ok");
}

main().catch((e) => {
  console.error(`js smoke: FAILED at step "${step}": ${e && e.stack ? e.stack : e}`);
  if (e && e.body) console.error(`js smoke: response body: ${JSON.stringify(e.body)}`);
  process.exit(1);
});
