/**
 * Prints the admin key of AUTH_JWT_SECRET (the reference's `create_admin_jwt()`:
 * `{"t":"","ad":true}`, HS256), the key that mints scoped keys with
 * `POST /v3/keys`: `AUTH_JWT_SECRET=… npx tsx services/memory/src/admin-key.ts`.
 */
import { adminKey } from './domain/v3/keys.ts';

const secret = process.env.AUTH_JWT_SECRET;
if (!secret) {
  process.stderr.write('AUTH_JWT_SECRET is not set\n');
  process.exit(1);
}
process.stdout.write(`${adminKey(secret)}\n`);
