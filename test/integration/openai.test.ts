import OpenAI from 'openai';
import { type Triton, tensor, withParameters, type Request, type Tensor, type TritonConfigInit } from '../../lib';
import { sample } from '../../decorators';
import { bindEchoChat } from '../../examples/chat/model';
import { bindEmbedText } from '../../examples/response-cache/model';
import { loopbackTriton } from '../helpers/loopback-triton';

/** Polls `ok` until it holds (the server's side of a cancellation finishes after the client has left). */
async function until(ok: () => boolean): Promise<void> {
  while (!ok()) await new Promise((r) => setTimeout(r, 5));
}

const text = (t: Tensor | undefined): string => Buffer.from((t as Tensor<'BYTES'>).data[0] ?? []).toString('utf8');

describe('OpenAI-compatible API', () => {
  let triton: Triton;
  let base: string;
  let client: OpenAI;
  /** What the `ticker` model's generator did. */
  const ticker = { started: 0, yielded: 0, closed: 0 };

  beforeEach(async () => {
    Object.assign(ticker, { started: 0, yielded: 0, closed: 0 });
    triton = loopbackTriton({ openai: true, responseCacheByteSize: 1024 * 1024 });
    bindEchoChat(triton);
    bindEmbedText(triton);
    // Non-decoupled: answers with its prompt, so that the chat template's work shows.
    triton.bind({
      modelName: 'prompt_echo',
      inferFunc: sample(async (inputs: Record<string, Tensor>) => ({ text_output: tensor('BYTES', [1], [`<${text(inputs.text_input)}>`]) })),
      inputs: [{ name: 'text_input', dtype: 'BYTES', shape: [1] }],
      outputs: [{ name: 'text_output', dtype: 'BYTES', shape: [1] }],
      config: { batching: false },
      chatTemplate: (messages) => messages.map((m) => `${m.role.toUpperCase()}=${m.content}`).join('|'),
    });
    // Reports its token counts and finish reason as response parameters rather than outputs.
    triton.bind({
      modelName: 'counted',
      inferFunc: sample(async () => withParameters({ text_output: tensor('BYTES', [1], ['two words']) }, { num_input_tokens: 4, num_output_tokens: 2, finish_reason: 'length' })),
      inputs: [{ name: 'text_input', dtype: 'BYTES', shape: [1] }],
      outputs: [{ name: 'text_output', dtype: 'BYTES', shape: [1] }],
      config: { batching: false },
    });
    // Answers with what reached it: its inputs and the request parameters.
    triton.bind({
      modelName: 'sampler',
      inferFunc: sample(async (inputs: Record<string, Tensor>, request: Request) => {
        const got = {
          max_tokens: inputs.max_tokens ? Array.from(inputs.max_tokens.data as Int32Array) : undefined,
          temperature: inputs.temperature ? Array.from(inputs.temperature.data as Float32Array) : undefined,
          stop_words: inputs.stop_words ? (inputs.stop_words.data as Uint8Array[]).map((b) => Buffer.from(b).toString()) : undefined,
          parameters: request.parameters,
        };
        return { text_output: tensor('BYTES', [1], [JSON.stringify(got)]) };
      }),
      inputs: [
        { name: 'text_input', dtype: 'BYTES', shape: [1] },
        { name: 'max_tokens', dtype: 'INT32', shape: [1], optional: true },
        { name: 'temperature', dtype: 'FP32', shape: [1], optional: true },
        { name: 'stop_words', dtype: 'BYTES', shape: [-1], optional: true },
      ],
      outputs: [{ name: 'text_output', dtype: 'BYTES', shape: [1] }],
      config: { batching: false },
    });
    // A long generation, slow enough to be aborted in the middle; it fails on the word 'boom'.
    triton.bind({
      modelName: 'ticker',
      inferFunc: sample(async function* (inputs: Record<string, Tensor>, request: Request) {
        ticker.started++;
        try {
          const words = text(inputs.text_input).includes('boom') ? ['one', 'two', 'boom'] : Array.from({ length: 1000 }, (_, i) => `w${i}`);
          for (const w of words) {
            if (w === 'boom') throw new Error('the model broke');
            await new Promise((r) => setTimeout(r, 2));
            if (request.signal.aborted) return;
            ticker.yielded++;
            yield { text_output: tensor('BYTES', [1], [`${w} `]) };
          }
        } finally {
          ticker.closed++;
        }
      }),
      inputs: [{ name: 'text_input', dtype: 'BYTES', shape: [1] }],
      outputs: [{ name: 'text_output', dtype: 'BYTES', shape: [1] }],
      config: { batching: false, decoupled: true },
    });
    await triton.run();
    base = `http://127.0.0.1:${triton.ports.http}`;
    client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0 });
  });

  // The fetch under the client may open a spare connection that sends nothing: stop() gives it its grace (5 s), well
  // inside the project's timeout.
  afterEach(async () => {
    await triton.stop();
  });

  it('models.list() lists the bound models', async () => {
    const ids: string[] = [];
    for await (const m of client.models.list()) ids.push(m.id);
    expect(ids).toEqual(['counted', 'echo_chat', 'embed_text', 'prompt_echo', 'sampler', 'ticker']);
    expect((await client.models.retrieve('echo_chat')).owned_by).toBe('tstriton');
  });

  const messages = [
    { role: 'system' as const, content: 'You are a parrot.' },
    { role: 'user' as const, content: 'hello streaming world' },
  ];

  it('chat.completions.create answers with the reply, its finish reason and usage', async () => {
    const reply = await client.chat.completions.create({ model: 'echo_chat', messages });
    expect(reply.object).toBe('chat.completion');
    expect(reply.model).toBe('echo_chat');
    expect(reply.choices).toHaveLength(1);
    expect(reply.choices[0]!.message).toEqual({ role: 'assistant', content: 'You said: hello streaming world' });
    expect(reply.choices[0]!.finish_reason).toBe('stop');
    // echo_chat counts words: the prompt `<|system|>\nYou are a parrot.\n<|user|>\nhello streaming world\n<|assistant|>\n`.
    expect(reply.usage).toEqual({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 });
  });

  it('chat.completions.create with stream: true gives the reply chunk by chunk, then the finish reason', async () => {
    const stream = await client.chat.completions.create({ model: 'echo_chat', messages, stream: true, stream_options: { include_usage: true } });
    const chunks: OpenAI.Chat.Completions.ChatCompletionChunk[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks.every((c) => c.object === 'chat.completion.chunk' && c.id === chunks[0]!.id)).toBe(true);
    expect(chunks[0]!.choices[0]!.delta.role).toBe('assistant');
    const contents = chunks.flatMap((c) => c.choices.map((ch) => ch.delta.content ?? '')).filter((t) => t !== '');
    expect(contents).toEqual(['You ', 'said: ', 'hello ', 'streaming ', 'world']);
    const finish = chunks.flatMap((c) => c.choices.map((ch) => ch.finish_reason)).filter((r) => r !== null);
    expect(finish).toEqual(['stop']);
    expect(chunks[chunks.length - 1]!.usage).toEqual({ prompt_tokens: 10, completion_tokens: 5, total_tokens: 15 });
  });

  it('max_completion_tokens reaches the model, which stops with finish reason length', async () => {
    const reply = await client.chat.completions.create({ model: 'echo_chat', messages, max_completion_tokens: 2 });
    expect(reply.choices[0]!.message.content).toBe('You said:');
    expect(reply.choices[0]!.finish_reason).toBe('length');
  });

  it('takes usage and finish reason from response parameters too', async () => {
    const reply = await client.chat.completions.create({ model: 'counted', messages });
    expect(reply.choices[0]!.message.content).toBe('two words');
    expect(reply.choices[0]!.finish_reason).toBe('length');
    expect(reply.usage).toEqual({ prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 });
  });

  it('applies the binding’s chat template function', async () => {
    const reply = await client.chat.completions.create({ model: 'prompt_echo', messages });
    expect(reply.choices[0]!.message.content).toBe('<SYSTEM=You are a parrot.|USER=hello streaming world>');
    // The model reports no token counts: no usage.
    expect(reply.usage).toBeUndefined();
    // A model that is not decoupled streams its one response as one chunk.
    const stream = await client.chat.completions.create({ model: 'prompt_echo', messages, stream: true });
    const contents: (string | null | undefined)[] = [];
    for await (const chunk of stream) contents.push(chunk.choices[0]?.finish_reason ?? chunk.choices[0]?.delta.content);
    expect(contents).toEqual(['', '<SYSTEM=You are a parrot.|USER=hello streaming world>', 'stop']);
  });

  it('sampling fields reach the model as its inputs of those names, or else as request parameters', async () => {
    const reply = await client.completions.create({ model: 'sampler', prompt: 'p', max_tokens: 7, temperature: 0.5, top_p: 0.9, seed: 42, stop: ['\n', 'END'] });
    expect(JSON.parse(reply.choices[0]!.text)).toEqual({
      max_tokens: [7],
      temperature: [0.5],
      stop_words: ['\n', 'END'],
      parameters: { stream: false, top_p: 0.9, seed: 42 },
    });
    const chat = await client.chat.completions.create({ model: 'sampler', messages, max_tokens: 3, max_completion_tokens: 9, stop: 'x' });
    expect(JSON.parse(chat.choices[0]!.message.content!)).toMatchObject({ max_tokens: [9], stop_words: ['x'] });
  });

  it.each([
    [{ model: 5, messages: [] }, 'model', /expected a non-empty string/],
    [{ model: 'echo_chat', messages: 'hi' }, 'messages', /expected an array/],
    [{ model: 'echo_chat', messages: [] }, 'messages', /empty array/],
    [{ model: 'echo_chat', messages: [{ content: 'hi' }] }, 'messages[0].role', /Missing required parameter/],
    [{ model: 'echo_chat', messages: [{ role: 'wizard', content: 'hi' }] }, 'messages[0].role', /"wizard". Supported values are: 'system', 'developer', 'user', 'assistant', 'tool'/],
    [{ model: 'echo_chat', messages: [{ role: 'user', content: 'hi' }, { role: 'function', content: 'x' }] }, 'messages[1].role', /"function". Supported values are/],
    [{ model: 'echo_chat', messages: [{ role: 'USER', content: 'hi' }] }, 'messages[0].role', /"USER". Supported values are/],
    [{ model: 'echo_chat', messages: [{ role: 7, content: 'hi' }] }, 'messages[0].role', /7. Supported values are/],
    [{ model: 'echo_chat', messages: [{ role: 'user', content: { a: 1 } }] }, 'messages[0].content', /expected a string or a list of text parts/],
    [{ model: 'echo_chat', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: {} }] }] }, 'messages[0].content[0]', /only text parts/],
    [{ model: 'echo_chat', messages: [{ role: 'user', content: 'hi' }], stream: 'yes' }, 'stream', /expected a boolean/],
    [{ model: 'echo_chat', messages: [{ role: 'user', content: 'hi' }], temperature: 3 }, 'temperature', /not between 0 and 2/],
    [{ model: 'echo_chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 0 }, 'max_tokens', /below the minimum/],
    [{ model: 'echo_chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1e12 }, 'max_tokens', /1000000000000 is above the maximum, 2147483647/],
    [{ model: 'echo_chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 1e20 }, 'max_tokens', /above the maximum, 2147483647/],
    [{ model: 'echo_chat', messages: [{ role: 'user', content: 'hi' }], max_completion_tokens: 2 ** 31 }, 'max_completion_tokens', /2147483648 is above the maximum/],
    [{ model: 'echo_chat', messages: [{ role: 'user', content: 'hi' }], max_tokens: 2.5 }, 'max_tokens', /expected an integer, got 2.5/],
    [{ model: 'echo_chat', messages: [{ role: 'user', content: 'hi' }], seed: 1.5 }, 'seed', /expected an integer/],
    [{ model: 'echo_chat', messages: [{ role: 'user', content: 'hi' }], seed: 1e20 }, 'seed', /above the maximum/],
    [{ model: 'echo_chat', messages: [{ role: 'user', content: 'hi' }], top_p: 'high' }, 'top_p', /expected a number/],
    [{ model: 'echo_chat', messages: [{ role: 'user', content: 'hi' }], presence_penalty: -3 }, 'presence_penalty', /not between -2 and 2/],
    [{ model: 'echo_chat', messages: [{ role: 'user', content: 'hi' }], stop: [1] }, 'stop', /list of up to 4 strings/],
    [{ model: 'echo_chat', messages: [{ role: 'user', content: 'hi' }], n: 2 }, 'n', /n=1/],
    [{ model: 'echo_chat', messages: [{ role: 'user', content: 'hi' }], logprobs: true }, 'logprobs', /not supported/],
    [{ model: 'echo_chat', messages: [{ role: 'user', content: 'hi' }], stream_options: { include_usage: true } }, 'stream_options', /only allowed when 'stream' is true/],
  ])('refuses the chat body %j with a 400 naming %s', async (body, param, message) => {
    const res = await fetch(`${base}/v1/chat/completions`, { method: 'POST', body: JSON.stringify(body) });
    expect(res.status).toBe(400);
    const { error } = (await res.json()) as { error: { param: string; message: string; type: string } };
    expect(error.param).toBe(param);
    expect(error.type).toBe('invalid_request_error');
    expect(error.message).toMatch(message);
  });

  it.each([
    ['/v1/completions', { model: 'echo_chat', prompt: ['a', 'b'] }, 'prompt'],
    ['/v1/completions', { model: 'echo_chat', prompt: [1, 2] }, 'prompt'],
    ['/v1/completions', { model: 'echo_chat', prompt: 'a', suffix: 'b' }, 'suffix'],
    ['/v1/embeddings', { model: 'embed_text' }, 'input'],
    ['/v1/embeddings', { model: 'embed_text', input: [[1, 2]] }, 'input'],
    ['/v1/embeddings', { model: 'embed_text', input: 'a', encoding_format: 'hex' }, 'encoding_format'],
    ['/v1/embeddings', { model: 'embed_text', input: 'a', dimensions: 3 }, 'dimensions'],
  ])('refuses %s %j with a 400 naming %s', async (path, body, param) => {
    const res = await fetch(`${base}${path}`, { method: 'POST', body: JSON.stringify(body) });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: { param: string } }).error.param).toBe(param);
  });

  it('takes the five roles of OpenAI’s schema, and templates each as it was sent', async () => {
    const roles = ['system', 'developer', 'user', 'assistant', 'tool'];
    const reply = await client.chat.completions.create({ model: 'prompt_echo', messages: roles.map((role, i) => ({ role, content: `m${i}` })) as never });
    expect(reply.choices[0]!.message.content).toBe('<SYSTEM=m0|DEVELOPER=m1|USER=m2|ASSISTANT=m3|TOOL=m4>');
  });

  it('refuses a body that is not UTF-8 with 400 in OpenAI’s shape, rather than replacing its bytes', async () => {
    const body = (content: Buffer) => Buffer.concat([Buffer.from('{"model":"prompt_echo","messages":[{"role":"user","content":"'), content, Buffer.from('"}]}')]);
    // A stray byte, an overlong '/', an encoded surrogate, a sequence cut off.
    for (const bad of [[0xff], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xe2, 0x82]]) {
      const res = await fetch(`${base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body(Buffer.from([0x61, ...bad, 0x62])) });
      expect([bad, res.status]).toEqual([bad, 400]);
      const { error } = (await res.json()) as { error: { message: string; type: string; param: string | null } };
      expect(error.type).toBe('invalid_request_error');
      expect(error.message).toMatch(/not valid UTF-8/);
    }
    // Well-formed UTF-8 reaches the model as it was sent.
    const ok = await fetch(`${base}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body(Buffer.from('é€😀', 'utf8')) });
    expect(ok.status).toBe(200);
    expect(((await ok.json()) as { choices: { message: { content: string } }[] }).choices[0]!.message.content).toBe('<USER=é€😀>');
  });

  it('a sampling value the model’s input cannot hold is refused 400, naming the request field', async () => {
    // max_tokens as INT8: 1000 is a valid max_tokens that this model cannot take.
    triton.bind({
      modelName: 'narrow',
      inferFunc: sample(async () => ({ text_output: tensor('BYTES', [1], ['x']) })),
      inputs: [
        { name: 'text_input', dtype: 'BYTES', shape: [1] },
        { name: 'max_tokens', dtype: 'INT8', shape: [1], optional: true },
      ],
      outputs: [{ name: 'text_output', dtype: 'BYTES', shape: [1] }],
      config: { batching: false },
    });
    await until(() => triton.repository.find('narrow').ready);
    for (const field of ['max_tokens', 'max_completion_tokens']) {
      const res = await fetch(`${base}/v1/chat/completions`, { method: 'POST', body: JSON.stringify({ model: 'narrow', messages, [field]: 1000 }) });
      expect([field, res.status]).toEqual([field, 400]);
      const { error } = (await res.json()) as { error: { message: string; param: string | null } };
      expect(error.param).toBe(field);
      expect(error.message).toMatch(new RegExp(`^Invalid '${field}' for model 'narrow': .*1000`));
    }
    expect((await client.chat.completions.create({ model: 'narrow', messages, max_tokens: 100 })).choices[0]!.message.content).toBe('x');
  });

  it('completions.create answers with and without streaming', async () => {
    const prompt = '<|user|>\nsay it twice\n<|assistant|>\n';
    const done = await client.completions.create({ model: 'echo_chat', prompt });
    expect(done.object).toBe('text_completion');
    expect(done.choices[0]!.text).toBe('You said: say it twice');
    expect(done.choices[0]!.finish_reason).toBe('stop');
    const echoed = await client.completions.create({ model: 'echo_chat', prompt, echo: true, max_tokens: 1 });
    expect(echoed.choices[0]!.text).toBe(`${prompt}You`);
    expect(echoed.choices[0]!.finish_reason).toBe('length');

    const stream = await client.completions.create({ model: 'echo_chat', prompt, stream: true });
    const pieces: string[] = [];
    const finish: string[] = [];
    for await (const chunk of stream) {
      if (chunk.choices[0]!.text !== '') pieces.push(chunk.choices[0]!.text);
      if (chunk.choices[0]!.finish_reason) finish.push(chunk.choices[0]!.finish_reason);
    }
    expect(pieces).toEqual(['You ', 'said: ', 'say ', 'it ', 'twice']);
    expect(finish).toEqual(['stop']);
  });

  it('embeddings.create returns the vectors the KServe endpoint returns, in float and base64', async () => {
    const input = ['a cat sat', 'the dog ran', 'a cat sat'];
    const kserve = await fetch(`${base}/v2/models/embed_text/infer`, {
      method: 'POST',
      body: JSON.stringify({ inputs: [{ name: 'TEXT', datatype: 'BYTES', shape: [3, 1], data: input }] }),
    });
    const expected = ((await kserve.json()) as { outputs: { data: number[] }[] }).outputs[0]!.data;
    const rows = input.map((_, i) => Float32Array.from(expected.slice(i * 64, (i + 1) * 64)));
    for (const encoding_format of ['float', undefined] as const) {
      // Without encoding_format, the client asks for base64 and decodes it.
      const result = await client.embeddings.create({ model: 'embed_text', input, ...(encoding_format && { encoding_format }) });
      expect(result.object).toBe('list');
      expect(result.data.map((d) => d.index)).toEqual([0, 1, 2]);
      result.data.forEach((d, i) => expect(Float32Array.from(d.embedding)).toEqual(rows[i]));
    }
  });

  it('embeddings take usage from the counts the model reports, and pick the output named for embeddings', async () => {
    triton.bind({
      modelName: 'counted_embed',
      inferFunc: sample(async (inputs: Record<string, Tensor>) => {
        const words = text(inputs.text_input).split(' ').length;
        return withParameters({ score: tensor('FP32', [1], Float32Array.of(9)), text_embedding: tensor('FP32', [2], Float32Array.of(words, 0.5)) }, { num_input_tokens: words });
      }),
      inputs: [{ name: 'text_input', dtype: 'BYTES', shape: [1] }],
      outputs: [
        { name: 'score', dtype: 'FP32', shape: [1] },
        { name: 'text_embedding', dtype: 'FP32', shape: [2] },
      ],
      config: { batching: false },
    });
    await until(() => triton.repository.find('counted_embed').ready);
    const result = await client.embeddings.create({ model: 'counted_embed', input: ['one two', 'three'], encoding_format: 'float' });
    expect(result.data.map((d) => d.embedding)).toEqual([[2, 0.5], [1, 0.5]]);
    expect(result.usage).toEqual({ prompt_tokens: 3, total_tokens: 3 });
  });

  it('a client that aborts a streaming chat stops the model’s generator, counted as CANCELED', async () => {
    const stream = await client.chat.completions.create({ model: 'ticker', messages, stream: true });
    let seen = 0;
    // Leaving the loop aborts the client's request.
    for await (const chunk of stream) {
      if (chunk.choices[0]?.delta.content) seen++;
      if (seen === 3) break;
    }
    await until(() => ticker.closed === 1);
    expect(ticker.yielded).toBeLessThan(1000);
    const model = triton.repository.get('ticker');
    await until(() => model.statistics.failures.CANCELED === 1);
    expect(model.liveRequests).toBe(0);
  });

  it('a model that fails mid-stream ends the stream with an error event the client raises', async () => {
    const stream = await client.chat.completions.create({ model: 'ticker', messages: [{ role: 'user', content: 'boom' }], stream: true });
    const contents: string[] = [];
    await expect(
      (async () => {
        for await (const chunk of stream) if (chunk.choices[0]?.delta.content) contents.push(chunk.choices[0].delta.content);
      })(),
    ).rejects.toThrow(/the model broke/);
    expect(contents).toEqual(['one ', 'two ']);
  });

  it('answers errors in OpenAI’s shape, which the client raises as its typed errors', async () => {
    const unknown = await client.chat.completions.create({ model: 'no_such_model', messages }).catch((e: unknown) => e);
    expect(unknown).toBeInstanceOf(OpenAI.NotFoundError);
    expect((unknown as InstanceType<typeof OpenAI.NotFoundError>).code).toBe('model_not_found');

    const missing = await client.chat.completions.create({ model: 'echo_chat' } as never).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(OpenAI.BadRequestError);
    expect((missing as InstanceType<typeof OpenAI.BadRequestError>).param).toBe('messages');

    const tools = await client.chat.completions
      .create({ model: 'echo_chat', messages, tools: [{ type: 'function', function: { name: 'f', parameters: {} } }] })
      .catch((e: unknown) => e);
    expect(tools).toBeInstanceOf(OpenAI.BadRequestError);
    expect((tools as Error).message).toMatch(/not supported/);

    const notText = await client.chat.completions.create({ model: 'embed_text', messages }).catch((e: unknown) => e);
    expect(notText).toBeInstanceOf(OpenAI.BadRequestError);
    expect((notText as Error).message).toMatch(/needs a BYTES input 'text_input'/);

    const badJson = await fetch(`${base}/v1/chat/completions`, { method: 'POST', body: '{"model": "echo_chat",' });
    expect(badJson.status).toBe(400);
    const body = (await badJson.json()) as { error: Record<string, unknown> };
    expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
    expect(body.error.type).toBe('invalid_request_error');
    expect(body.error.message).toMatch(/could not parse the JSON body/);

    const nowhere = await fetch(`${base}/v1/nowhere`, { method: 'POST', body: '{}' });
    expect(nowhere.status).toBe(404);
    expect(((await nowhere.json()) as { error: { message: string } }).error.message).toBe('Invalid URL (POST /v1/nowhere)');
    const wrongMethod = await fetch(`${base}/v1/chat/completions`);
    expect(wrongMethod.status).toBe(405);
    // The server goes on.
    expect((await client.chat.completions.create({ model: 'echo_chat', messages })).choices[0]!.message.content).toBe('You said: hello streaming world');
  });
});

describe('OpenAI-compatible API settings', () => {
  let triton: Triton | undefined;

  afterEach(async () => {
    await triton?.stop();
    triton = undefined;
  });

  const start = async (init: TritonConfigInit) => {
    triton = loopbackTriton(init);
    bindEchoChat(triton);
    await triton.run();
    return `http://127.0.0.1:${triton.ports.http}`;
  };

  it('is off unless enabled: /v1 is an unknown route', async () => {
    const base = await start({});
    expect((await fetch(`${base}/v1/models`)).status).toBe(404);
  });

  it('openaiApiKey: requests need Authorization: Bearer <key>, as the clients send their api_key', async () => {
    const base = await start({ openai: true, openaiApiKey: 'sk-right' });
    const wrong = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'sk-wrong', maxRetries: 0 });
    const refused = await wrong.models.list().catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((refused as InstanceType<typeof OpenAI.AuthenticationError>).code).toBe('invalid_api_key');
    const right = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'sk-right', maxRetries: 0 });
    expect((await right.chat.completions.create({ model: 'echo_chat', messages: [{ role: 'user', content: 'hi' }] })).choices[0]!.message.content).toBe('You said: hi');
    // The KServe endpoints are not behind the key.
    expect((await fetch(`${base}/v2/health/ready`)).status).toBe(200);
  });

  it('restricted APIs apply: inference and model-repository groups need their header', async () => {
    const base = await start({ openai: true, httpRestrictedApi: 'inference:infer-key=secret;model-repository:admin-key=root' });
    const bare = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0 });
    const refused = await bare.chat.completions.create({ model: 'echo_chat', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(OpenAI.AuthenticationError);
    expect((refused as Error).message).toMatch(/expecting header 'infer-key'/);
    expect(await bare.models.list().catch((e: unknown) => e)).toBeInstanceOf(OpenAI.AuthenticationError);
    const keyed = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'unused', maxRetries: 0, defaultHeaders: { 'infer-key': 'secret' } });
    expect((await keyed.chat.completions.create({ model: 'echo_chat', messages: [{ role: 'user', content: 'hi' }] })).choices[0]!.message.content).toBe('You said: hi');
  });

  it('a restricted group keyed on authorization=Bearer <key> takes the clients’ api_key', async () => {
    const base = await start({ openai: true, httpRestrictedApi: 'inference:authorization=Bearer sk-group' });
    const wrong = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'sk-other', maxRetries: 0 });
    expect(await wrong.chat.completions.create({ model: 'echo_chat', messages: [{ role: 'user', content: 'hi' }] }).catch((e: unknown) => e)).toBeInstanceOf(OpenAI.AuthenticationError);
    const right = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'sk-group', maxRetries: 0 });
    expect((await right.chat.completions.create({ model: 'echo_chat', messages: [{ role: 'user', content: 'hi' }] })).choices[0]!.message.content).toBe('You said: hi');
  });

  it('openaiPort: also serves the API on a port of its own', async () => {
    await start({ openai: true, openaiPort: 0 });
    const port = triton!.ports.openai;
    expect(port).toBeGreaterThan(0);
    expect(port).not.toBe(triton!.ports.http);
    const own = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'unused', maxRetries: 0 });
    expect((await own.chat.completions.create({ model: 'echo_chat', messages: [{ role: 'user', content: 'hi' }] })).choices[0]!.message.content).toBe('You said: hi');
    const other = await fetch(`http://127.0.0.1:${port}/v2/health/ready`);
    expect(other.status).toBe(404);
    expect(((await other.json()) as { error: { type: string } }).error.type).toBe('invalid_request_error');
  });

  it('refuses an invalid chat template at bind', () => {
    triton = loopbackTriton({ openai: true });
    expect(() =>
      triton!.bind({
        modelName: 'bad_template',
        inferFunc: sample(async () => ({ text_output: tensor('BYTES', [1], ['x']) })),
        inputs: [{ name: 'text_input', dtype: 'BYTES', shape: [1] }],
        outputs: [{ name: 'text_output', dtype: 'BYTES', shape: [1] }],
        chatTemplate: '{role} without content',
      }),
    ).toThrow("invalid chatTemplate for model 'bad_template': expected a function or a string with a {content} placeholder");
  });
});
