import type { RouteDef } from '@surveyor/contract';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { type ZodTypeProvider, validatorCompiler } from 'fastify-type-provider-zod';
import type { z } from 'zod';

type Out<T> = T extends z.ZodType ? z.output<T> : undefined;

export type RouteRequest<R extends RouteDef> = FastifyRequest & {
  body: Out<R['body']>;
  params: Out<R['params']>;
  query: Out<R['querystring']>;
};

/**
 * Registers a contract route with its handler: validation, response schemas and auth come from
 * the contract definition, so the code and `/openapi.json` cannot disagree.
 */
export function addRoute<R extends RouteDef>(
  app: FastifyInstance,
  def: R,
  handler: (request: RouteRequest<R>, reply: FastifyReply) => Promise<unknown>,
  options: { bodyLimit?: number; fastBody?: (body: unknown) => Out<R['body']> | null } = {},
): void {
  const { fastBody, ...routeOptions } = options;
  const response = Object.fromEntries(Object.entries(def.response).filter(([, s]) => s !== null && !def.produces));
  app.withTypeProvider<ZodTypeProvider>().route({
    method: def.method,
    url: def.url,
    schema: {
      ...(def.params ? { params: def.params } : {}),
      ...(def.querystring ? { querystring: def.querystring } : {}),
      ...(def.body ? { body: def.body } : {}),
      response,
    },
    config: { auth: def.auth, operationId: def.operationId, internal: def.internal ?? false, rateLimited: def.rateLimited ?? true, collection: def.collection ?? false, queryParams: def.querystring ? Object.keys(def.querystring.shape) : [] },
    handler: handler as never,
    // A body check of the schema's own rules, cheaper for a large body, tried first; whatever it
    // does not accept goes to the schema, whose answer (and problem) is then the route's.
    ...(fastBody
      ? {
          validatorCompiler: (req: { httpPart?: string }) => {
            const schema = validatorCompiler(req as Parameters<typeof validatorCompiler>[0]);
            if (req.httpPart !== 'body') return schema;
            return (data: unknown) => {
              const value = fastBody(data);
              return value === null ? schema(data) : { value };
            };
          },
        }
      : {}),
    ...routeOptions,
  } as never);
}
