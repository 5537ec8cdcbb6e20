/**
 * The dashboard's inbox, timeline, events page, agent output and a large run page, in a real
 * headless Chromium against a real server and real runs (see harness.ts).
 */
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { approvals, runs } from "../../src/db/index.ts";
import type { Page } from "playwright-core";
import { AUTH, chromiumPath, dashboardHarness, SHOTS, TIMEOUT_MS, TOKEN } from "./harness.ts";

describe.skipIf(!chromiumPath)("the dashboard's pages in Chromium", () => {
  const h = dashboardHarness();
  /** The inbox's card (`selector`) of run `runId`: the one that links to the run. */
  const cardOf = (page: Page, selector: string, runId: string) => page.locator(selector, { has: page.locator(`a[href="/runs/${runId}"]`) });
  /** Starts a run of `workflow`, waits until it asks for a person, then opens the inbox. */
  const inboxFor = async (workflow: string) => {
    const runId = await h.start(workflow);
    await h.waitForStatus(runId, ["waiting-approval"]);
    return { runId, page: await h.open("/inbox") };
  };

  test(
    "a gate run started in the page waits on its page, is approved in the inbox with a note, and finishes",
    async () => {
      const page = await h.open("/");
      await page.getByText("Start a run").click();
      await page.getByLabel("Workflow name").fill("gate");
      await page.getByRole("button", { name: "Start run" }).click();
      await page.waitForURL(/\/runs\/[^/]+$/);
      const runId = decodeURIComponent(new URL(page.url()).pathname.split("/").pop()!);
      await page.getByTestId("run-status").getByText("waiting-approval").waitFor({ timeout: 10_000 });

      await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Inbox" }).click();
      const card = cardOf(page, "section.approval", runId);
      await card.getByRole("heading", { name: "Waiting for approval: Ship it?" }).waitFor();
      await card.getByLabel("Note (optional)").fill("ship from the inbox");
      await card.getByRole("button", { name: "Approve" }).click();
      await page.getByRole("status").getByText("Ship it?: approved.").waitFor();
      await card.waitFor({ state: "detached" });

      await page.goto(`${h.url}/runs/${runId}`);
      await page.getByTestId("run-status").getByText("finished").waitFor({ timeout: 10_000 });
      const decision = await approvals.getApproval(h.server.db, { runId, nodeId: "ship" });
      expect([decision?.status, decision?.note]).toEqual(["approved", "ship from the inbox"]);
      await page.close();
    },
    TIMEOUT_MS,
  );

  test(
    "select and rank approvals are decided in the inbox: one option chosen, then the options reordered by keyboard",
    async () => {
      const { runId, page } = await inboxFor("choose");
      const plan = cardOf(page, 'section.approval[data-approval="plan"]', runId);
      await plan.getByRole("heading", { name: "Waiting for approval: How should 1.4 roll out?" }).waitFor();
      expect(await plan.locator(".metadata").textContent()).toBe("version1.4ownerrelease-team");
      // Approving without a choice is refused in the page.
      await plan.getByRole("button", { name: "Approve" }).click();
      await plan.getByText("Choose an option before approving.").waitFor();
      await plan.getByLabel("Everyone at once").check();
      await plan.getByRole("button", { name: "Approve" }).click();

      const order = cardOf(page, 'section.approval[data-approval="order"]', runId);
      await order.getByRole("heading", { name: "Waiting for approval: Order the regions" }).waitFor({ timeout: 10_000 });
      // Asia-Pacific to the top: focus its "up" button and press Enter twice.
      await order.getByRole("button", { name: "Move Asia-Pacific up" }).focus();
      await page.keyboard.press("Enter");
      await order.getByRole("button", { name: "Move Asia-Pacific up" }).focus();
      await page.keyboard.press("Enter");
      expect(await order.locator("ol.rank li").evaluateAll((lis) => lis.map((li) => li.getAttribute("data-option")))).toEqual(["ap", "eu", "us"]);
      await page.screenshot({ path: join(SHOTS, "inbox.png"), fullPage: true });
      await order.getByRole("button", { name: "Approve" }).click();
      await h.waitForStatus(runId, ["finished"]);
      const rows = await approvals.listApprovals(h.server.db, { runId });
      expect(rows.map((r) => [r.nodeId, r.status, JSON.parse(r.decisionJson ?? "null")])).toEqual([
        ["order", "approved", { ranked: ["ap", "eu", "us"] }],
        ["plan", "approved", { selected: "full" }],
      ]);
      await page.close();
    },
    TIMEOUT_MS,
  );

  test(
    "a human task's form shows the client's and the server's errors at their fields, then a valid answer lets the run finish",
    async () => {
      const { runId, page } = await inboxFor("human-form");
      const card = cardOf(page, "section.human", runId);
      await card.getByText("Review release 1.4: fill in every field.").waitFor();
      const field = (path: string) => card.locator(`[data-field="${path}"]`);
      await card.getByLabel("Title").fill("v1"); // too short: only the server's schema knows
      await card.getByLabel("Score").fill("7.5");
      await card.getByLabel("Reviewers").fill("2.5"); // not an integer: the page says so before sending
      await card.getByLabel("Approved").check();
      await card.getByLabel("Severity").selectOption("high");
      await card.getByLabel("Tags (one per line)").fill("release\nmuch-too-long-a-tag"); // the second item too long: the server says so at tags.1
      await card.getByLabel("Ratings (one per line)").fill("4\nabc"); // not a number: the page says so before sending
      await card.getByLabel("Email").fill("ada@example.com");
      await card.getByRole("button", { name: "Submit answer" }).click();
      expect(await field("reviewers").locator(".field-error").textContent()).toBe("Enter a whole number");
      expect(await field("ratings").locator(".field-error").textContent()).toBe("Line 2: enter a number");
      expect(await card.locator(".field-error").count()).toBe(2);

      await card.getByLabel("Reviewers").fill("2");
      await card.getByLabel("Ratings (one per line)").fill("4\n4.5");
      await card.getByRole("button", { name: "Submit answer" }).click();
      await field("title").locator(".field-error").waitFor();
      expect(await field("title").locator(".field-error").textContent()).toContain("3");
      expect(await field("contact.name").locator(".field-error").count()).toBe(1); // the nested object's empty name
      // The list item's problem is shown at its list, with its line.
      expect(await field("tags").locator(".field-error").textContent()).toMatch(/^Line 2: .*12/);
      expect(await card.getByLabel("Tags (one per line)").getAttribute("aria-invalid")).toBe("true");
      expect(await card.locator(".field-error").count()).toBe(3);
      expect(await card.getByLabel("Title").getAttribute("aria-invalid")).toBe("true");
      expect(await field("reviewers").locator(".field-error").count()).toBe(0);
      await page.screenshot({ path: join(SHOTS, "inbox-human.png"), fullPage: true });

      await card.getByLabel("Title").fill("Release 1.4");
      await card.getByLabel("Name").fill("Ada");
      await card.getByLabel("Tags (one per line)").fill("release\nurgent");
      await card.getByRole("button", { name: "Submit answer" }).click();
      await page.getByRole("status").getByText("Answer to review sent").waitFor();
      await h.waitForStatus(runId, ["finished"]);
      const report = (await (await fetch(`${h.url}/runs/${runId}/outputs`, { headers: AUTH })).json()) as {
        outputs: { nodeId: string; row: Record<string, unknown> }[];
      };
      expect(report.outputs.find((o) => o.nodeId === "after")?.row).toEqual({ summary: "Release 1.4: high, 2 tags" });
      expect(report.outputs.find((o) => o.nodeId === "review")?.row).toMatchObject({
        reviewers: 2,
        score: 7.5,
        contact: { name: "Ada", email: "ada@example.com" },
        tags: ["release", "urgent"],
        ratings: [4, 4.5],
      });
      await page.close();
    },
    TIMEOUT_MS,
  );

  test(
    "the timeline scrubs to frame 0 and back, showing the tree at each frame with its changes highlighted, and forks the run from frame 1",
    async () => {
      const runId = await h.start("steps");
      await h.waitForStatus(runId, ["finished"]);
      const page = await h.open(`/runs/${runId}`);
      await page.getByText("Timeline").click();
      const slider = page.getByRole("slider", { name: "Frame" });
      const info = page.getByTestId("frame-info");
      const last = Number(await slider.getAttribute("max"));
      expect(last).toBeGreaterThan(5);
      const timeline = page.locator(".timeline");
      const at = (n: number) => info.getByText(new RegExp(`^Frame ${n} of ${last} · .* changes?$`)).waitFor();
      await at(last);
      // The last frame: step-5 finished, the one change highlighted.
      expect(await timeline.locator(".task.changed").evaluateAll((ts) => ts.map((t) => t.getAttribute("data-task")))).toEqual(["step-5"]);
      expect(await timeline.locator('.task[data-task="step-5"] .status').textContent()).toBe("finished");
      expect(await timeline.locator(".changes li").allTextContents()).toEqual(["~ step-5: state running → finished"]);

      await slider.focus();
      await page.keyboard.press("Home");
      await at(0);
      expect(await timeline.getByRole("heading", { name: "First frame: everything mounted" }).count()).toBe(1);
      const states = await timeline.locator(".task").evaluateAll((ts) => ts.map((t) => [t.getAttribute("data-task"), t.querySelector(".status")?.textContent]));
      expect(states).toEqual([
        ["step-0", "running"],
        ["step-1", "pending"],
        ["step-2", "pending"],
        ["step-3", "pending"],
        ["step-4", "pending"],
        ["step-5", "pending"],
      ]);
      expect(await timeline.locator(".task.changed").count()).toBe(6); // all mounted at frame 0

      expect(await timeline.locator(".forks").count()).toBe(0);
      await page.keyboard.press("ArrowRight");
      await at(1);
      expect(await timeline.locator(".changes li").allTextContents()).toEqual(["~ step-0: state running → finished", "~ step-1: state pending → running"]);

      await page.keyboard.press("End");
      await at(last);
      expect(await timeline.locator(".task.changed").evaluateAll((ts) => ts.map((t) => t.getAttribute("data-task")))).toEqual(["step-5"]);
      // Fork from frame 1 (started at once): the page opens the fork, which runs step-1 on and finishes.
      await slider.focus();
      await page.keyboard.press("Home");
      await page.keyboard.press("ArrowRight");
      await at(1);
      // A task the frame does not hold is refused by the server, and the page says why.
      const resetField = timeline.getByLabel("Tasks to run again (optional, comma-separated ids)");
      await resetField.fill("nope");
      await timeline.getByRole("button", { name: "Fork from frame 1" }).click();
      expect(await timeline.getByRole("alert").textContent()).toContain("nope");
      expect(new URL(page.url()).pathname).toBe(`/runs/${runId}`);
      await resetField.fill("");
      await timeline.getByRole("button", { name: "Fork from frame 1" }).click();
      await page.waitForURL((u) => u.pathname.startsWith("/runs/") && u.pathname !== `/runs/${runId}`);
      const forkId = decodeURIComponent(new URL(page.url()).pathname.split("/").pop()!);
      await page.getByTestId("run-status").getByText("finished").waitFor({ timeout: 10_000 });
      const fork = await runs.getRun(h.server.db, forkId);
      expect([fork?.parentRunId, fork?.forkedFromFrame]).toEqual([runId, 1]);
      // Back on the parent, frame 1 links to the fork.
      await page.goBack();
      await page.getByText("Timeline").click();
      // The timeline opens at the last frame once its frames are loaded; a key pressed before that is lost.
      await at(last);
      await page.getByRole("slider", { name: "Frame" }).focus();
      await page.keyboard.press("Home");
      await page.keyboard.press("ArrowRight");
      await at(1);
      expect(await timeline.locator(".forks").textContent()).toBe(`Forked from this frame: run ${forkId.slice(0, 12)} (finished)`);
      await page.screenshot({ path: join(SHOTS, "timeline.png"), fullPage: true });
      await timeline.locator(".forks a").click();
      await page.waitForURL(`${h.url}/runs/${forkId}`);
      await page.close();
    },
    TIMEOUT_MS,
  );

  test(
    "a failed task shows its error and, collapsed under it, the stack of its failed attempt starting at the author's line",
    async () => {
      const fixture = join(import.meta.dir, "..", "fixtures", "throws.tsx");
      const line =
        readFileSync(fixture, "utf8")
          .split("\n")
          .findIndex((l) => l.includes("// THROWS HERE")) + 1;
      const runId = await h.start("throws");
      await h.waitForStatus(runId, ["failed"]);
      const page = await h.open(`/runs/${runId}`);
      const task = page.locator('.tree .task[data-task="total"]');
      await task.locator(".task-error").getByText("not a number: twelve", { exact: false }).waitFor({ timeout: 10_000 });
      const stack = task.getByTestId("attempt-stack");
      const frames = stack.locator("pre");
      expect(await frames.isVisible()).toBe(false); // collapsed until asked for
      await stack.getByText("Stack of attempt 1").click();
      await frames.waitFor({ state: "visible" });
      const text = (await frames.textContent()) ?? "";
      expect(text.split("\n")[0]).toStartWith(`at parseTotal (${fixture}:${line}:`);
      expect(text).toMatch(/… \d+ internal frames?$/);
      await page.screenshot({ path: join(SHOTS, "run-failed-stack.png"), fullPage: true });
      await page.close();
    },
    TIMEOUT_MS,
  );

  test(
    "an agent's output streams into its task's panel while it runs",
    async () => {
      const runId = await h.start("talk", { pauseMs: 1500 }); // room for a loaded machine between the pieces
      const page = await h.open(`/runs/${runId}`);
      const review = page.locator('.tree .task[data-task="review"]');
      const log = review.getByRole("log", { name: "Agent output of review" });
      await log.getByText("Reading the diff.").waitFor({ timeout: 10_000 });
      // The first piece is shown while the agent still works on the rest.
      expect(await review.locator(".status").textContent()).toBe("running");
      expect(await log.textContent()).not.toContain("Looks fine.");
      await log.getByText("Looks fine.", { exact: false }).waitFor({ timeout: 10_000 });
      await page.getByTestId("run-status").getByText("finished").waitFor({ timeout: 10_000 });
      expect(await log.textContent()).toBe("Reading the diff. Two files changed. Looks fine.");
      await page.close();
    },
    TIMEOUT_MS,
  );

  test(
    "the events page filters by type and node and follows the run live until it ends",
    async () => {
      const runId = await h.start("steps", { delayMs: 600 }); // the run outlasts a slow page load on a loaded machine
      const page = await h.open(`/runs/${runId}/events`);
      await page.getByLabel("Type").selectOption("NodeFinished");
      const rows = page.locator("table.events tbody tr");
      const state = page.getByTestId("events-state");
      // Live: the first NodeFinished rows appear while the run is still going.
      await rows.first().waitFor({ timeout: 10_000 });
      expect(await state.textContent()).toContain("following the run live");
      expect(await rows.count()).toBeLessThan(6);
      await state.getByText("the run is over").waitFor({ timeout: 10_000 });
      expect(await rows.count()).toBe(6);
      expect(new Set(await rows.evaluateAll((rs) => rs.map((r) => r.getAttribute("data-type"))))).toEqual(new Set(["NodeFinished"]));

      await page.getByLabel("Node").selectOption("step-3");
      await rows.nth(1).waitFor({ state: "detached" });
      expect(await rows.locator("td:nth-child(4)").allTextContents()).toEqual(["step-3"]);
      expect(new URL(page.url()).search).toBe("?type=NodeFinished&node=step-3");
      await page.getByLabel("Type").selectOption("");
      // Every event of step-3: started, then finished.
      expect(await rows.locator("td:nth-child(3)").allTextContents()).toEqual(["NodeStarted", "NodeFinished"]);
      await page.screenshot({ path: join(SHOTS, "events.png"), fullPage: true });
      expect((await runs.getRun(h.server.db, runId))?.status).toBe("finished");
      await page.close();
    },
    TIMEOUT_MS,
  );

  test(
    "a run of 1,000 tasks renders its whole tree (the figure is printed, not asserted)",
    async () => {
      const runId = await h.start("wide", { count: 1000 });
      await h.waitForStatus(runId, ["finished"], 25_000);
      const timings: number[] = [];
      for (let i = 0; i < 3; i++) {
        const page = await h.browser.newPage({ viewport: { width: 1200, height: 720 } });
        // Set before the page's own script runs: notes performance.now() (ms since the navigation
        // started) at the DOM change that completes the tree, every task with its output row.
        await page.addInitScript(`new MutationObserver((_, o) => {
          if (document.querySelectorAll(".tree .task .output").length === 1000) { window.treeDrawnMs = performance.now(); o.disconnect(); }
        }).observe(document, { childList: true, subtree: true });`);
        await page.goto(`${h.url}/runs/${runId}#token=${TOKEN}`);
        const handle = await page.waitForFunction("window.treeDrawnMs", null, { timeout: 20_000 });
        timings.push(Math.round((await handle.jsonValue()) as number));
        expect(await page.locator('.tree .task[data-task="item-999"] .status').textContent()).toBe("finished");
        await page.close();
      }
      console.log(`run page of 1,000 tasks: tree with every output in the DOM ${timings.join(" / ")} ms after navigation started (3 loads, browser time)`);
    },
    TIMEOUT_MS,
  );
});
