/**
 * The rooms a daemon needs only once it runs a workflow, loaded then: the run loop and the workflow
 * loader bring the renderer, the agents, the tools and the frame codec with them, which a pass with
 * nothing due (`smithers supervise` most of the time) never touches.
 */
export const runRoom = () => import("../run/index.ts");
export const workflowRoom = () => import("../workflow/index.ts");
