import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';
import type { Triton } from '../../lib';
import { bindOpenApiModels } from '../helpers/openapi-models';
import { track } from '../helpers/resources';
import { loopbackTriton } from '../helpers/loopback-triton';

// The API reference page in a real browser: Debian's headless Chromium (scripts/install-test-tools.sh installs it),
// driven by playwright-core, which downloads no browser. Timeouts are sized for a busy 2-core machine: Chromium
// takes seconds to start there, and Swagger UI's 1.7 MB bundle a few more to parse.
jest.setTimeout(180_000);

/** Debian's Chromium binary (the `chromium` on the PATH is a shell wrapper around it), or CHROMIUM_PATH. */
const CHROMIUM = process.env.CHROMIUM_PATH ?? ['/usr/lib/chromium/chromium', '/usr/bin/chromium'].find((p) => existsSync(p));
/** Where the screenshot of a model's page goes when set (docs/images/openapi-page.png is made this way). */
const SCREENSHOT = process.env.OPENAPI_SCREENSHOT;
const STEP_MS = 60_000;

describe('the API reference page in Chromium', () => {
  let triton: Triton;
  let base: string;
  let browser: Browser | undefined;

  beforeAll(async () => {
    if (CHROMIUM === undefined) throw new Error('no Chromium: run scripts/install-test-tools.sh (Debian package chromium) or set CHROMIUM_PATH');
    triton = track(loopbackTriton({ exitTimeoutSeconds: 5 }));
    bindOpenApiModels(triton);
    await triton.run();
    base = `http://127.0.0.1:${triton.ports.http}`;
    // As root in a container Chromium's sandbox cannot start.
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'], timeout: STEP_MS });
  });

  afterAll(async () => {
    await browser?.close();
    await triton?.stop();
  });

  it('lists every model, runs "Try it out" with a model\'s example, shows the 200 answer, and asks nothing of another host', async () => {
    const page = await (browser as Browser).newPage({ viewport: { width: 1280, height: 1400 } });
    page.setDefaultTimeout(STEP_MS);
    const requests: string[] = [];
    const refused: string[] = [];
    page.on('request', (r) => requests.push(r.url()));
    page.on('console', (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) refused.push(m.text());
    });
    page.on('pageerror', (err) => refused.push(`page error: ${err.message}`));

    await page.goto(`${base}/v2/docs`);
    for (const model of ['add_sub', 'mixed', 'plain']) await page.locator(`a[href="/v2/models/${model}/docs"]`).waitFor();
    await page.locator('.opblock-summary-path', { hasText: '/v2/repository/index' }).first().waitFor();

    // Swagger UI opens the description's links in a new tab: the model's page is opened here from the link's address.
    await page.goto(new URL((await page.locator('a[href="/v2/models/add_sub/docs"]').getAttribute('href')) as string, base).href);
    const infer = page.locator('.opblock-post').filter({ has: page.locator('.opblock-summary-path', { hasText: /^\/v2\/models\/add_sub\/infer$/ }) });
    await infer.locator('.opblock-summary').click();
    // "Try it out" is on from the start: the example is in the body editor, ready to send.
    const editor = infer.locator('textarea.body-param__text');
    await editor.waitFor();
    expect(JSON.parse(await editor.inputValue())).toEqual({
      id: 'example',
      inputs: [
        { name: 'a', datatype: 'FP32', shape: [2, 3], data: [0, 0, 0, 0, 0, 0] },
        { name: 'b', datatype: 'FP32', shape: [2, 3], data: [0, 0, 0, 0, 0, 0] },
      ],
    });
    await infer.locator('button.execute').click();
    const live = infer.locator('.live-responses-table');
    await live.locator('.response-col_status', { hasText: '200' }).waitFor();
    const body = JSON.parse(await live.locator('.response-col_description pre.microlight').first().innerText()) as { model_name: string; outputs: { name: string; shape: number[] }[] };
    expect(body.model_name).toBe('add_sub');
    expect(body.outputs.map((o) => [o.name, o.shape])).toEqual([['sum', [2, 3]], ['diff', [2, 3]]]);
    if (SCREENSHOT) {
      await live.evaluate((el) => el.scrollIntoView({ block: 'center' }));
      await page.screenshot({ path: SCREENSHOT });
    }

    expect(refused).toEqual([]);
    expect(requests.filter((url) => !url.startsWith(`${base}/`) && !url.startsWith('data:'))).toEqual([]);
    expect(requests).toContain(`${base}/v2/models/add_sub/infer`);
    await page.close();
  });

  it("asks for a restricted metadata group's key, then loads the model's document with it; Authorize sends another group's", async () => {
    const restricted = track(loopbackTriton({ exitTimeoutSeconds: 5, httpRestrictedApi: 'metadata:meta-key=s3cret;inference:infer-key=k2' }));
    try {
      bindOpenApiModels(restricted);
      await restricted.run();
      const page = await (browser as Browser).newPage();
      page.setDefaultTimeout(STEP_MS);
      await page.goto(`http://127.0.0.1:${restricted.ports.http}/v2/models/plain/docs`);
      const key = page.locator('input[name="meta-key"]');
      await key.fill('s3cret');
      await page.locator('button[type="submit"]').click();
      await page.locator('.opblock-summary-path', { hasText: /^\/v2\/models\/plain\/infer$/ }).waitFor();
      // The key goes with Try it out's requests too: the metadata route answers 200.
      const metadata = page.locator('.opblock-get').filter({ has: page.locator('.opblock-summary-path', { hasText: /^\/v2\/models\/plain$/ }) });
      await metadata.locator('.opblock-summary').click();
      await metadata.locator('button.execute').click();
      await metadata.locator('.live-responses-table .response-col_status', { hasText: '200' }).waitFor();

      // The inference group's key, entered under Authorize, goes with the infer request.
      await page.locator('.auth-wrapper button.authorize').click();
      const scheme = page.locator('.dialog-ux .auth-container', { hasText: 'header_infer-key' });
      await scheme.locator('input').fill('k2');
      await scheme.locator('button.authorize').click();
      await page.locator('.dialog-ux button.close-modal').click();
      const infer = page.locator('.opblock-post').filter({ has: page.locator('.opblock-summary-path', { hasText: /^\/v2\/models\/plain\/infer$/ }) });
      await infer.locator('.opblock-summary').click();
      await infer.locator('button.execute').click();
      await infer.locator('.live-responses-table .response-col_status', { hasText: '200' }).waitFor();
      await page.close();
    } finally {
      await restricted.stop();
    }
  });
});
