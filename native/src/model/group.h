/* Decode groups (model/group.c; the public half is in runner.h): what the generate loop calls. */
#ifndef RUNNER_MODEL_GROUP_H
#define RUNNER_MODEL_GROUP_H

#include "runner.h"

const runner_model *runner_group_model(const runner_group *group);

/* A generation's decode phase begins (1) or, the group being full, it decodes alone (0). */
int runner_group_enter(runner_group *group);
void runner_group_leave(runner_group *group);

/* Evaluate ctx's token at pos in the group's next step; on return ctx's logits are the token's, as
 * runner_decode(ctx, &token, 1, pos, LAST) leaves them. */
runner_status runner_group_decode(runner_group *group, runner_context *ctx, int32_t token, int32_t pos, char *err, int32_t err_len);

#endif
