import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A certificate and its key, as PEM file paths. */
export interface CertFiles {
  cert: string;
  key: string;
}

/** Certificates made for one test file, in a temporary folder. */
export interface TestCertificates {
  dir: string;
  /** ca, other_ca, server (SAN 127.0.0.1 and localhost), client (signed by ca) and stranger (signed by other_ca). */
  files: Record<'ca' | 'other_ca' | 'server' | 'client' | 'stranger', CertFiles>;
  /** Removes the folder. */
  remove(): void;
}

/** Makes a CA, a server and client certificate it signs, and a client certificate another CA signs, with the openssl CLI. */
export function makeTestCertificates(prefix: string): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), `tstriton-${prefix}-`));
  const openssl = (...args: string[]): void => {
    // Bounded: a synchronous call that hung would block jest's timeouts too.
    execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000 });
  };
  const paths = (name: string): CertFiles => ({ cert: join(dir, `${name}.pem`), key: join(dir, `${name}.key`) });
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  const makeCa = (name: string): CertFiles => {
    openssl('req', '-x509', ...ec, '-days', '2', '-subj', `/CN=tstriton test ${name}`, '-keyout', `${name}.key`, '-out', `${name}.pem`);
    return paths(name);
  };
  const makeLeaf = (name: string, ca: string, extensions: string): CertFiles => {
    writeFileSync(join(dir, `${name}.ext`), extensions);
    openssl('req', ...ec, '-subj', `/CN=${name}`, '-keyout', `${name}.key`, '-out', `${name}.csr`);
    openssl('x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.pem`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-days', '2', '-extfile', `${name}.ext`, '-out', `${name}.pem`);
    return paths(name);
  };
  const files = {
    ca: makeCa('ca'),
    other_ca: makeCa('other_ca'),
    server: makeLeaf('server', 'ca', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n'),
    client: makeLeaf('client', 'ca', 'extendedKeyUsage=clientAuth\n'),
    stranger: makeLeaf('stranger', 'other_ca', 'extendedKeyUsage=clientAuth\n'),
  };
  return { dir, files, remove: () => rmSync(dir, { recursive: true, force: true }) };
}
