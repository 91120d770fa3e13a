// `tstriton serve --module` and `tstriton analyze --module` take a module whose default export binds models.
export { bindAddSub as default } from './model';
