// Chats with `echo_chat` and embeds texts with `embed_text` through the official `openai` client:
// `node dist/examples/chat/client.js` while `npm start` (or dist/examples/chat/server.js) serves.
// OPENAI_BASE_URL overrides the default URL.
import OpenAI from 'openai';

const client = new OpenAI({ baseURL: process.env.OPENAI_BASE_URL ?? 'http://localhost:8000/v1', apiKey: process.env.OPENAI_API_KEY ?? 'none' });

async function main(): Promise<void> {
  console.log('models:', (await client.models.list()).data.map((m) => m.id).join(', '));

  const messages = [
    { role: 'system' as const, content: 'You are a parrot.' },
    { role: 'user' as const, content: 'Hello from the OpenAI client' },
  ];
  const reply = await client.chat.completions.create({ model: 'echo_chat', messages });
  console.log('reply:', reply.choices[0]?.message.content, `(${reply.choices[0]?.finish_reason}, usage ${JSON.stringify(reply.usage)})`);

  process.stdout.write('streamed:');
  const stream = await client.chat.completions.create({ model: 'echo_chat', messages, stream: true });
  for await (const chunk of stream) process.stdout.write(chunk.choices[0]?.delta.content ? ` [${chunk.choices[0].delta.content}]` : '');
  process.stdout.write('\n');

  const embeddings = await client.embeddings.create({ model: 'embed_text', input: ['a cat', 'a dog'] });
  console.log('embeddings:', embeddings.data.map((e) => `${e.embedding.length} floats`).join(', '));
}

main().catch((err: unknown) => {
  console.error(err instanceof OpenAI.APIError ? `${err.status ?? ''} ${err.message}` : err);
  process.exitCode = 1;
});
