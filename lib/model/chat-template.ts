import { TritonError } from '../base/errors';
import type { ModelView } from './model-view';

/** One message of a chat, its content reduced to text. */
export interface ChatMessage {
  /** `system`, `developer`, `user`, `assistant`, `tool`, ... as the client sent it. */
  readonly role: string;
  readonly content: string;
  /** The participant's name, when the client gave one. */
  readonly name?: string;
}

/**
 * How a chat becomes the prompt of a text model (`/v1/chat/completions`): a function of the messages, or a
 * template string applied to each message, where `{role}`, `{content}` and `{name}` stand for the message's
 * fields. After the messages, the string is applied to the role `assistant` up to `{content}`, which is the
 * generation prompt: `'<|im_start|>{role}\n{content}<|im_end|>\n'` ends the prompt with
 * `<|im_start|>assistant\n`.
 */
export type ChatTemplate = string | ((messages: readonly ChatMessage[]) => string);

/** The template of a binding that gives none: `user: Hello\nassistant: `. */
export const DEFAULT_CHAT_TEMPLATE = '{role}: {content}\n';

/**
 * A chat template ready to apply; `text` is the template string it was compiled from (unset for a function), which
 * another thread can compile again to apply it there.
 */
export type CompiledChatTemplate = ((messages: readonly ChatMessage[]) => string) & { readonly text?: string };

const PLACEHOLDER = /\{(role|content|name)\}/g;

/**
 * Checks a binding's `chatTemplate` and turns it into a function.
 *
 * @throws TritonError `INVALID_CONFIG` naming the model when it is neither a function nor a string with `{content}`.
 */
export function compileChatTemplate(template: ChatTemplate | undefined, modelName: string): CompiledChatTemplate {
  if (typeof template === 'function') {
    return (messages) => {
      const prompt = template(messages);
      if (typeof prompt !== 'string') throw new TritonError('INFERENCE_FAILED', `the chat template of model '${modelName}' returned ${typeof prompt}, expected a string`);
      return prompt;
    };
  }
  const text = template ?? DEFAULT_CHAT_TEMPLATE;
  if (typeof text !== 'string' || !text.includes('{content}')) {
    throw new TritonError('INVALID_CONFIG', `invalid chatTemplate for model '${modelName}': expected a function or a string with a {content} placeholder`);
  }
  const generation = text.slice(0, text.indexOf('{content}'));
  const fill = (pattern: string, m: ChatMessage) => pattern.replace(PLACEHOLDER, (_all, key: 'role' | 'content' | 'name') => m[key] ?? '');
  return Object.assign((messages: readonly ChatMessage[]) => messages.map((m) => fill(text, m)).join('') + fill(generation, { role: 'assistant', content: '' }), { text });
}

/** The compiled chat template of each model, set when it is built. */
const TEMPLATES = new WeakMap<ModelView, CompiledChatTemplate>();

/** Records the chat template `model` was bound with (or, for a front-end thread's copy, how to ask for it). */
export function attachChatTemplate<M extends ModelView>(model: M, template: CompiledChatTemplate): M {
  TEMPLATES.set(model, template);
  return model;
}

/** The chat template of `model`: its binding's, or the default one. */
export function chatTemplateOf(model: ModelView): CompiledChatTemplate {
  let compiled = TEMPLATES.get(model);
  if (!compiled) {
    compiled = compileChatTemplate(undefined, model.name);
    TEMPLATES.set(model, compiled);
  }
  return compiled;
}
