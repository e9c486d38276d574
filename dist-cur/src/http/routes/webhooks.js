import { z } from 'zod';
import { ProblemSchema, standardErrors } from '../schemas/common.js';
import { DeliveryListQuery, DeliveryListSchema, deliveryDto, WebhookCreateBody, WebhookListQuery, WebhookListSchema, WebhookParams, WebhookPatchBody, WebhookSchema, webhookDto, } from '../schemas/webhooks.js';
const tags = ['webhooks'];
const deliveryDescription = 'Each event is POSTed as { id, event, at, job | task } with the headers Jobclock-Event, Jobclock-Delivery (dedup on it: ' +
    'delivery is at least once) and Jobclock-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256 of "<t>.<body>" with the secret>. ' +
    'A 2xx answer within 10 s delivers it; anything else is retried with exponential backoff for at least 24 h.';
/** Webhook subscriptions and their deliveries: admin only. */
export function webhookRoutes(deps) {
    const webhooks = deps.services.webhooks;
    return async (app) => {
        app.post('/webhooks', {
            config: { access: 'webhooks:manage' },
            schema: {
                tags,
                operationId: 'createWebhook',
                summary: 'Subscribe a URL to events',
                description: `${deliveryDescription} The secret is generated when not given and shown in this answer only.`,
                body: WebhookCreateBody,
                response: { 201: WebhookSchema, ...standardErrors },
            },
        }, async (request, reply) => reply.status(201).send(webhookDto(await webhooks.create(request.body, request.role))));
        app.get('/webhooks', {
            config: { access: 'webhooks:manage' },
            schema: {
                tags,
                operationId: 'listWebhooks',
                summary: 'Every webhook, oldest first',
                querystring: WebhookListQuery,
                response: { 200: WebhookListSchema, ...standardErrors },
            },
        }, async (request) => {
            const page = await webhooks.list(request.query);
            return { items: page.items.map(webhookDto), nextCursor: page.nextCursor };
        });
        app.get('/webhooks/:id', {
            config: { access: 'webhooks:manage' },
            schema: {
                tags,
                operationId: 'getWebhook',
                summary: 'A webhook (without its secret)',
                params: WebhookParams,
                response: { 200: WebhookSchema, ...standardErrors, 404: ProblemSchema },
            },
        }, async (request) => webhookDto(await webhooks.get(request.params.id)));
        app.patch('/webhooks/:id', {
            config: { access: 'webhooks:manage' },
            schema: {
                tags,
                operationId: 'updateWebhook',
                summary: "Change a webhook's URL, events or filter, or rotate its secret",
                description: 'Deliveries not yet sent go to the new URL, signed with the new secret.',
                params: WebhookParams,
                body: WebhookPatchBody,
                response: { 200: WebhookSchema, ...standardErrors, 404: ProblemSchema },
            },
        }, async (request) => webhookDto(await webhooks.update(request.params.id, request.body, request.role)));
        app.delete('/webhooks/:id', {
            config: { access: 'webhooks:manage' },
            schema: {
                tags,
                operationId: 'deleteWebhook',
                summary: 'Delete a webhook and its deliveries',
                params: WebhookParams,
                response: { 204: z.null().meta({ description: 'Deleted' }), ...standardErrors, 404: ProblemSchema },
            },
        }, async (request, reply) => {
            await webhooks.delete(request.params.id, request.role);
            return reply.status(204).send(null);
        });
        app.get('/webhooks/:id/deliveries', {
            config: { access: 'webhooks:manage' },
            schema: {
                tags,
                operationId: 'listWebhookDeliveries',
                summary: "A webhook's deliveries, newest first, with their attempts and last answer",
                params: WebhookParams,
                querystring: DeliveryListQuery,
                response: { 200: DeliveryListSchema, ...standardErrors, 404: ProblemSchema },
            },
        }, async (request) => {
            const page = await webhooks.deliveries(request.params.id, request.query);
            return { items: page.items.map(deliveryDto), nextCursor: page.nextCursor };
        });
    };
}
//# sourceMappingURL=webhooks.js.map