import { compileChatTemplate, DEFAULT_CHAT_TEMPLATE } from '../../../lib/model/chat-template';

const chat = [
  { role: 'system', content: 'Be brief.' },
  { role: 'user', content: 'Hello {role}', name: 'ann' },
];

describe('chat templates', () => {
  it.each([
    [undefined, 'system: Be brief.\nuser: Hello {role}\nassistant: '],
    [DEFAULT_CHAT_TEMPLATE, 'system: Be brief.\nuser: Hello {role}\nassistant: '],
    ['<|im_start|>{role}\n{content}<|im_end|>\n', '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHello {role}<|im_end|>\n<|im_start|>assistant\n'],
    ['[{name}] {content}|', '[] Be brief.|[ann] Hello {role}|[] '],
  ])('applies %j to each message, then opens the reply', (template, prompt) => {
    expect(compileChatTemplate(template, 'm')(chat)).toBe(prompt);
  });

  it('calls a function template with the messages', () => {
    expect(compileChatTemplate((ms) => ms.map((m) => m.role).join(','), 'm')(chat)).toBe('system,user');
  });

  it('refuses a template that is not a function or has no {content}', () => {
    expect(() => compileChatTemplate('{role}', 'm')).toThrow("invalid chatTemplate for model 'm': expected a function or a string with a {content} placeholder");
    expect(() => compileChatTemplate(42 as never, 'm')).toThrow(/invalid chatTemplate/);
  });

  it('fails the request when a function template returns no string', () => {
    expect(() => compileChatTemplate((() => undefined) as never, 'm')(chat)).toThrow("the chat template of model 'm' returned undefined, expected a string");
  });
});
