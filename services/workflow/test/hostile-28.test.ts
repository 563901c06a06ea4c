import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { forEachStorage } from '@svc/testkit';
import { startWorkflow, waitJob } from './helpers.ts';

/**
 * What hostile and careless clients found (issue 28), local runtime: node ids
 * that are names of Object.prototype members, empty status filters, the bare
 * twin of every /api route, and the reference's cache headers on image paths.
 */

/** Node ids a plain object would answer with an inherited member. */
const IDS = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'];

/** A prompt as JSON text (an object literal with a `__proto__` key would set a prototype, not a key). */
const promptText = (nodes: string) => `{"prompt":{${nodes}}}`;
const post = (url: string, path: string, body: string) => fetch(url + path, { method: 'POST', headers: { 'content-type': 'application/json' }, body });

forEachStorage('issue 28: hostile clients, local runtime', (storage) => {
  describe('local', () => {
    let srv: Awaited<ReturnType<typeof startWorkflow>>;
    before(async () => {
      srv = await startWorkflow(storage, { enableTestNodes: true });
    });
    after(async () => {
      await srv.close();
    });

    test('node ids named after Object.prototype members validate, fail validation and run like any other id', async () => {
      for (const id of IDS) {
        const bad = await post(srv.url, '/api/prompt', promptText(`"${id}":{"class_type":"PrimitiveInt","inputs":{"value":"x"}},"o":{"class_type":"PreviewAny","inputs":{"source":["${id}",0]}}`));
        assert.equal(bad.status, 400, id);
        const body = JSON.parse(await bad.text());
        assert.equal(body.error.type, 'prompt_outputs_failed_validation', id);
        assert.ok(Object.hasOwn(body.node_errors, id), `${id}: ${JSON.stringify(body.node_errors)}`);
        assert.deepEqual(body.node_errors[id].dependent_outputs, ['o']);
        assert.equal(body.node_errors[id].errors[0].type, 'invalid_input_type');

        // A link to a node that is not in the prompt, named like an inherited member.
        const dangling = await post(srv.url, '/api/prompt', promptText(`"o":{"class_type":"PreviewAny","inputs":{"source":["${id}",0]}}`));
        assert.equal(dangling.status, 400, id);
        const d = JSON.parse(await dangling.text());
        assert.equal(d.node_errors.o.errors[0].type, 'exception_during_validation', `${id}: ${JSON.stringify(d)}`);

        const ok = await post(srv.url, '/api/prompt', promptText(`"${id}":{"class_type":"PrimitiveString","inputs":{"value":"v-${id}"}},"out":{"class_type":"PreviewAny","inputs":{"source":["${id}",0]}}`));
        assert.equal(ok.status, 200, id);
        const job = await waitJob(srv.http, ((await ok.json()) as { prompt_id: string }).prompt_id);
        assert.ok(Object.hasOwn(job.workflow.prompt, id), id);
        // An output node whose id is such a name keeps its outputs too.
        const own = await post(srv.url, '/api/prompt', promptText(`"${id}":{"class_type":"PreviewAny","inputs":{"source":"own-${id}"}}`));
        assert.equal(own.status, 200, id);
        const ownJob = await waitJob(srv.http, ((await own.json()) as { prompt_id: string }).prompt_id);
        assert.equal(ownJob.status, 'completed', `${id}: ${JSON.stringify(ownJob.execution_error)}`);
        assert.deepEqual(ownJob.outputs[id], { text: [`own-${id}`] }, id);
        assert.equal(ownJob.outputs_count, 1, id);
      }
    });

    test('a secret input on a node named __proto__ is redacted in the stored prompt and pollutes no object', async () => {
      const r = await post(
        srv.url,
        '/api/prompt',
        promptText(`"__proto__":{"class_type":"OpenAICompatibleChat","inputs":{"prompt":"hi","api_key":"sk-test-key-0123456789","model":"m","system_prompt":"","temperature":1,"max_tokens":0,"seed":0,"base_url":""}},"out":{"class_type":"PreviewAny","inputs":{"source":["__proto__",0]}}`),
      );
      assert.equal(r.status, 200, await r.clone().text());
      const job = await waitJob(srv.http, ((await r.json()) as { prompt_id: string }).prompt_id);
      assert.equal(({} as Record<string, unknown>).api_key, undefined);
      assert.ok(Object.hasOwn(job.workflow.prompt, '__proto__'));
      assert.equal(job.workflow.prompt.__proto__.inputs.api_key, '[redacted]');
      assert.ok(!JSON.stringify(job).includes('sk-test-key-0123456789'));
    });

    test('status filters naming no status (?status=, and ,,,) match nothing, on both storages', async () => {
      await post(srv.url, '/api/prompt', promptText(`"o":{"class_type":"PreviewAny","inputs":{"source":"s"}}`));
      for (const q of [',', ',,,', ' , ']) {
        for (const p of ['/api/jobs', '/jobs']) {
          const r = await srv.http.get(`${p}?status=${encodeURIComponent(q)}`);
          assert.equal(r.status, 200, `${p} ${q}: ${r.text}`);
          assert.deepEqual(r.body.jobs, []);
          assert.equal(r.body.pagination.total, 0);
        }
      }
    });

    test('every /api route answers at its bare path too: /assets as /api/assets', async () => {
      for (const p of ['/assets', '/assets/tags/refine', '/tags']) {
        const api = await srv.http.get(`/api${p}`);
        const bare = await srv.http.get(p);
        assert.equal(api.status, 200, p);
        assert.equal(bare.status, 200, `${p}: ${bare.text}`);
        assert.deepEqual(Object.keys(bare.body).sort(), Object.keys(api.body).sort());
      }
      const id = '00000000-0000-4000-8000-000000000000';
      assert.equal((await srv.http.get(`/assets/${id}`)).status, (await srv.http.get(`/api/assets/${id}`)).status);
      assert.equal((await fetch(`${srv.url}/assets/hash/blake3:${'0'.repeat(64)}`, { method: 'HEAD' })).status, 404);
    });

    test('a 404 for an image path is cached an hour (public without credentials), as the reference', async () => {
      for (const p of ['/extensions/nopack/missing.png', '/templates/missing.webp', '/api/view?filename=missing.png&type=output', '/view?filename=missing.jpg']) {
        const r = await fetch(srv.url + p);
        assert.equal(r.status, 404, p);
        assert.equal(r.headers.get('cache-control'), 'public, max-age=3600', p);
        await r.arrayBuffer();
      }
      const withKey = await fetch(srv.url + '/extensions/nopack/missing.png', { headers: { authorization: 'Bearer x' } });
      assert.equal(withKey.headers.get('cache-control'), 'private, max-age=3600');
      // Not an image path: nothing is added.
      const other = await fetch(srv.url + '/api/view?filename=missing.txt');
      assert.equal(other.status, 404);
      assert.equal(other.headers.get('cache-control'), null);
    });
  });
});
