import { standardErrors } from '../schemas/common.js';
import { FlowListQuery, FlowPatchBody, TypePatchBody, GroupListSchema, GroupsDefaultPatchBody, GroupsDefaultSchema, GroupParams, GroupSchema, groupDto, TypeListSchema, TypeParams, TypeSchema, typeDto, } from '../schemas/flow.js';
const tags = ['flow-control'];
const policyDescription = 'paused: no job of it is leased (running ones go on); concurrency: at most that many of its jobs running; ' +
    'rate "<n>/<duration>": at most n of its jobs begin in any window of that length; null clears a limit. ' +
    'Enforced inside the lease, across every instance; it applies to every lease that starts after this answered.';
const typePatchDescription = `${policyDescription} push: jobclock leases the type's jobs itself (the same lease) and POSTs each to push.url: ` +
    '2xx finishes (a JSON body is the result), 202 leaves it running for the endpoint to report with the leaseToken, ' +
    '429/503 with Retry-After gives the lease back for that long, other 4xx fail for good, 5xx and timeouts fail with retries.';
/** GET/PATCH /types and /groups: flow-control policies and what is waiting. */
export function flowRoutes(deps) {
    const flow = deps.services.flow;
    return async (app) => {
        app.get('/types', {
            config: { access: 'jobs:read' },
            schema: {
                tags,
                operationId: 'listJobTypes',
                summary: 'Every job type that has open jobs or a policy',
                querystring: FlowListQuery,
                response: { 200: TypeListSchema, ...standardErrors },
            },
        }, async (request) => {
            const page = await flow.list('type', request.query);
            return { items: page.items.map(typeDto), nextCursor: page.nextCursor };
        });
        app.get('/types/:type', {
            config: { access: 'jobs:read' },
            schema: {
                tags,
                operationId: 'getJobType',
                summary: 'A job type: its policy and its open jobs',
                params: TypeParams,
                response: { 200: TypeSchema, ...standardErrors },
            },
        }, async (request) => typeDto(await flow.getType(request.params.type)));
        app.patch('/types/:type', {
            config: { access: 'jobs:manage' },
            schema: {
                tags,
                operationId: 'updateJobType',
                summary: "Change a job type's policy",
                description: typePatchDescription,
                params: TypeParams,
                body: TypePatchBody,
                response: { 200: TypeSchema, ...standardErrors },
            },
        }, async (request) => {
            const { push, ...rest } = request.body;
            const pushIn = push && { url: push.url, secret: push.secret, timeoutMs: push.timeout };
            return typeDto(await flow.patchType(request.params.type, { ...rest, ...(push === undefined ? {} : { push: pushIn }) }, request.role));
        });
        app.get('/groups', {
            config: { access: 'jobs:read' },
            schema: {
                tags,
                operationId: 'listJobGroups',
                summary: 'Every job group that has open jobs or a policy',
                querystring: FlowListQuery,
                response: { 200: GroupListSchema, ...standardErrors },
            },
        }, async (request) => {
            const page = await flow.list('group', request.query);
            return { items: page.items.map(groupDto), nextCursor: page.nextCursor };
        });
        app.get('/groups-default', {
            config: { access: 'jobs:read' },
            schema: {
                tags,
                operationId: 'getGroupsDefault',
                summary: 'The policy of every group without one of its own',
                response: { 200: GroupsDefaultSchema, ...standardErrors },
            },
        }, async () => flow.groupsDefault());
        app.patch('/groups-default', {
            config: { access: 'jobs:manage' },
            schema: {
                tags,
                operationId: 'updateGroupsDefault',
                summary: 'Change the policy of every group without one of its own',
                description: 'concurrency: at most that many jobs of each group nobody declared (no PATCH /groups/{group}) running at once, in order ' +
                    '(priority, then runAt, then creation); groups side by side. rate: at most n jobs of each such group begin in any ' +
                    'window of that length. Enforced inside the lease across every instance; null removes a limit.',
                body: GroupsDefaultPatchBody,
                response: { 200: GroupsDefaultSchema, ...standardErrors },
            },
        }, async (request) => flow.patchGroupsDefault(request.body, request.role));
        app.get('/groups/:group', {
            config: { access: 'jobs:read' },
            schema: {
                tags,
                operationId: 'getJobGroup',
                summary: 'A job group: its policy and its open jobs',
                params: GroupParams,
                response: { 200: GroupSchema, ...standardErrors },
            },
        }, async (request) => groupDto(await flow.get('group', request.params.group)));
        app.patch('/groups/:group', {
            config: { access: 'jobs:manage' },
            schema: {
                tags,
                operationId: 'updateJobGroup',
                summary: "Change a job group's policy",
                description: policyDescription,
                params: GroupParams,
                body: FlowPatchBody,
                response: { 200: GroupSchema, ...standardErrors },
            },
        }, async (request) => groupDto(await flow.patch('group', request.params.group, request.body, request.role)));
    };
}
//# sourceMappingURL=flow.js.map