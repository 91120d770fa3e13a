/** The error `fn` throws; the test fails if it returns. */
export function thrownBy<E = Error>(fn: () => unknown): E {
  try {
    fn();
  } catch (err) {
    return err as E;
  }
  throw new Error('expected an error');
}

/** The error `p` rejects with; the test fails if it resolves. */
export async function rejectionOf<E = Error>(p: Promise<unknown>): Promise<E> {
  try {
    await p;
  } catch (err) {
    return err as E;
  }
  throw new Error('expected the call to fail');
}
