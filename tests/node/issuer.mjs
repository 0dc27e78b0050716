// An OAuth 2 / OpenID issuer for the tests: oauth2-mock-server's issuer and service, on a
// loopback port of its own, signing real tokens with its own keys. What is added here is
// only what a test asks of an issuer: tokens of given claims (and the forgeries an attacker
// would try), a key rotation, a count of key-set fetches, and an introspection endpoint
// (RFC 7662) that knows revocations, which the mock's fixed `{active: true}` does not.
//
// Prints one JSON line `{"issuer": URL, "kid": KID}` when it listens; ends when stdin closes.
import { createHmac, createPublicKey, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import { createLocalJWKSet, jwtVerify } from 'jose';
import { Events, OAuth2Issuer, OAuth2Service } from 'oauth2-mock-server';

// The resource server's own credentials at the issuer, for introspection.
const CLIENT = { id: 'desk-rs', secret: 'desk-rs-secret' };

const issuer = new OAuth2Issuer();
const service = new OAuth2Service(issuer);
const rsa = await issuer.keys.generate('RS256', { kid: 'rs-1' });
await issuer.keys.generate('ES256', { kid: 'es-1' });
const revoked = new Set();
let jwksRequests = 0;

const base64url = (data) => Buffer.from(data).toString('base64url');
const json = (res, status, body) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
};

// A token of the issuer's: `{sub, aud, scope, kid, expires_in, claims, header, remove,
// forge}`. `forge` is `none` (unsigned) or `hs256-public` (an HMAC under the RSA key's
// public half), each over the payload the issuer would have signed.
service.addRoute('POST', '/harness/token', async (req, res) => {
  const ask = req.body ?? {};
  const token = await issuer.buildToken({
    kid: ask.kid ?? 'rs-1',
    expiresIn: ask.expires_in ?? 300,
    scopesOrTransform: (header, payload) => {
      Object.assign(header, { typ: 'at+jwt' }, ask.header ?? {});
      Object.assign(payload, {
        sub: ask.sub ?? 'alice',
        aud: ask.aud,
        scope: ask.scope ?? '',
        client_id: 'desk-client',
        jti: randomUUID(),
      }, ask.claims ?? {});
      for (const claim of ask.remove ?? []) delete payload[claim];
    },
  });
  const [, payload] = token.split('.');
  let forged = token;
  if (ask.forge === 'none') {
    forged = `${base64url(JSON.stringify({ alg: 'none', typ: 'at+jwt', kid: 'rs-1' }))}.${payload}.`;
  } else if (ask.forge === 'hs256-public') {
    const header = base64url(JSON.stringify({ alg: 'HS256', typ: 'at+jwt', kid: 'rs-1' }));
    const publicPem = createPublicKey({ key: rsa, format: 'jwk' }).export({ type: 'spki', format: 'pem' });
    const mac = createHmac('sha256', publicPem).update(`${header}.${payload}`).digest('base64url');
    forged = `${header}.${payload}.${mac}`;
  }
  json(res, 200, { access_token: forged });
});

// A new signing key, published from now on; tokens use it when they name it.
service.addRoute('POST', '/harness/rotate', async (_req, res) => {
  const key = await issuer.keys.generate('RS256');
  json(res, 200, { kid: key.kid });
});

service.addRoute('GET', '/harness/jwks-requests', (_req, res) => {
  json(res, 200, { count: jwksRequests });
});

service.addRoute('POST', '/harness/revoke', (req, res) => {
  revoked.add(req.body?.token);
  json(res, 200, {});
});

// RFC 7662: the caller authenticates as a client; the answer is the token's claims while it
// verifies and is not revoked, else `{active: false}`.
service.addRoute('POST', '/harness/introspect', async (req, res) => {
  const expected = `Basic ${Buffer.from(`${CLIENT.id}:${CLIENT.secret}`).toString('base64')}`;
  if (req.headers.authorization !== expected) {
    json(res, 401, { error: 'invalid_client' });
    return;
  }
  const token = req.body?.token;
  if (typeof token !== 'string' || revoked.has(token)) {
    json(res, 200, { active: false });
    return;
  }
  try {
    const keys = createLocalJWKSet({ keys: issuer.keys.toJSON() });
    const { payload } = await jwtVerify(token, keys, { issuer: issuer.url });
    json(res, 200, { active: true, ...payload });
  } catch {
    json(res, 200, { active: false });
  }
});

service.on(Events.BeforeWellKnownOpenIdConfiguration, (metadata) => {
  metadata.body.introspection_endpoint = `${issuer.url}/harness/introspect`;
  metadata.body.revocation_endpoint = `${issuer.url}/harness/revoke`;
});

const server = createServer((req, res) => {
  if (req.url?.startsWith('/jwks')) jwksRequests += 1;
  service.requestHandler(req, res);
});
server.listen(0, '127.0.0.1', () => {
  issuer.url = `http://127.0.0.1:${server.address().port}`;
  process.stdout.write(`${JSON.stringify({ issuer: issuer.url, kid: 'rs-1' })}\n`);
});
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
