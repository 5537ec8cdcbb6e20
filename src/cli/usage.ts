/** The whole `smithers` usage: `smithers --help` prints it, and each command's help and known flags are read from it (help.ts). */
export const USAGE = `Usage: smithers init [dir] [--force]
       smithers test [bun test arguments]
       smithers up <workflow.tsx> [--input '<json>'] [--run-id ID] [--resume] [--db PATH] [--root DIR] [--max-concurrency N] [--grace-ms N] [--durability process|power] [--max-cost-usd N] [--max-tokens N] [--pricing JSON] [--limit KEY=N]… [--log-format text|json]
       smithers up --resume <run-id> [--db PATH] [options as above]
       smithers up <workflow.tsx> --detach [--input '<json>'] [--run-id ID] [--db PATH] [--priority N] [--tenant T] [--idempotency-key K] [--debounce KEY=D]
       smithers worker [--db PATH|URL] [--concurrency N] [--workflows DIR] [--lease D] [--poll-interval D] [--durability process|power] [--limit KEY=N]… [--quiet] [--log-format text|json] [--metrics-port N]
       smithers ps [--status S] [--limit N] [--json] [--db PATH]
       smithers limits [--json] [--db PATH]
       smithers inspect <run-id> [--json] [--db PATH]
       smithers sandboxes <run-id> [--json] [--db PATH]
       smithers eval compare <run-a> <run-b> [--json] [--db PATH]
       smithers eval <workflow.tsx> --cases FILE.jsonl [--concurrency N] [--json] [--db PATH]
       smithers events <run-id> [--after-seq N] [--type T] [--node ID] [--follow] [--json] [--db PATH]
       smithers cancel <run-id> [--no-wait] [--timeout-ms N] [--json] [--db PATH]
       smithers supervise [--db PATH] [--stale-after-ms N] [--watch] [--interval-ms N] [--durability process|power] [--log-format text|json] [--metrics-port N]
       smithers frames <run-id> [--frame N] [--db PATH]
       smithers timeline <run-id> [--json] [--db PATH]
       smithers scores <run-id> [--node ID] [--json] [--db PATH]
       smithers diff <run-id> <frameA> <frameB> [--json] [--db PATH]
       smithers fork <run-id> --frame N [--reset-node ID]… [--input JSON] [--run-id NEW] [--run] [--force] [--workflow FILE] [--json] [--db PATH]
       smithers replay <run-id> --frame N [--reset-node ID]… [--run-id NEW] [--force] [--workflow FILE] [--db PATH]
       smithers rewind <run-id> <frame> [--resume] [--force] [--no-revert] [--workflow FILE] [--json] [--db PATH]
       smithers approve <run-id> [--node ID] [--iteration N] [--select KEY | --rank K1,K2,…] [--by NAME] [--note TEXT] [--yes] [--db PATH]
       smithers deny <run-id> [--node ID] [--iteration N] [--by NAME] [--note TEXT] [--yes] [--db PATH]
       smithers signal <run-id> <name> [--data JSON] [--correlation-id ID] [--dedupe-key KEY] [--by NAME] [--db PATH]
       smithers human list [--json] [--db PATH]
       smithers human answer <request-id> --data JSON [--by NAME] [--db PATH]
       smithers human cancel <request-id> [--db PATH]
       smithers cron add <workflow.tsx> --schedule "<expr>" [--input JSON] [--tz ZONE] [--id ID] [--db PATH]
       smithers cron list [--json] [--db PATH]
       smithers cron rm <id> [--db PATH]
       smithers serve [--port N] [--host H] [--db PATH] [--workflows DIR] [--token-file PATH] [--tls-cert PEM --tls-key PEM | --insecure-http] [--max-body SIZE] [--queue-capacity N] [--max-concurrent N] [--lease D] [--limit KEY=N]… [--prune-older-than D] [--log-format text|json] [--idempotency-window D]
       smithers prune [--older-than 7d] [--dry-run] [--vacuum] [--json] [--db PATH]

init        scaffolds a project in dir (default: the current directory) that runs at once:
            tsconfig.json with the JSX settings, workflows/hello.tsx (an input schema, two tasks),
            test/hello.test.ts (the test kit), package.json scripts start, dev and test, and
            .gitignore lines for the database. Existing files are not overwritten: FILE_EXISTS
            names them and nothing is written (package.json gets only the scripts, .gitignore only
            the missing lines)
  --force               overwrite those files and scripts
test        runs bun test (with these arguments) under the Bun that runs smithers: a project
            needs no Bun of its own
up          runs a workflow to completion, printing a line as each task starts and finishes
            (on a terminal: one redrawn status line instead, with tasks done/total, those running, time);
            exit 3 when it stops to wait for an approval, a human answer, a signal, a timer, a
            concurrency slot or a rate window
            (smithers supervise --watch resumes it once answered or due; or run it again with --resume).
            A run that continues as a new run (<ContinueAsNew>, <Loop continueAsNewEvery>) is
            followed to the end of its chain; --resume of any run of a chain resumes its last run.
  --input JSON          run input (validated against the workflow's input schema)
  --run-id ID           id for a new run, or the run to continue with --resume
  --resume              continue run --run-id: finished tasks are kept, failed ones run again
                        (also the peer's forms: --resume true, --resume <run-id>); the workflow
                        file may be left out: the one the run recorded is loaded
  --db PATH|URL         SQLite file or postgres:// URL (default: $SMITHERS_DATABASE_URL, $SMITHERS_DB_PATH, the workflow's db, ./smithers.db)
  --root DIR            the tasks' working directory, and the git repository <Worktree> paths
                        resolve against and are added to (default: the current directory)
  --max-concurrency N   cap on tasks running at once
  --grace-ms N          on Ctrl-C or a timeout, how long a task body may take to stop before its
                        attempt is recorded abandoned (default 10000); Ctrl-C twice abandons at once
  --durability MODE     process (default): commits survive a crash or kill -9; power: also a
                        power cut, each commit waits for an fsync (side-effect intents always do)
  --max-cost-usd N      spend limit of the run in US dollars: once its agents cost this much no
                        agent attempt starts and the run fails BUDGET_EXCEEDED (stored on the run;
                        --resume with a higher limit goes on)
  --max-tokens N        token limit of the run (input plus output), kept the same way
  --pricing JSON        prices for agents that report tokens but no cost, in US dollars per
                        million tokens: '{"<model>":{"inputPerMTok":3,"outputPerMTok":15}}'
  --limit KEY=N         the concurrency of a <Task concurrencyKey> key, over the workflow's own
                        limits; KEY.perMinute=N and KEY.tokensPerMinute=N set its rate (repeatable)
  --allow-code-change   resume although the workflow's code changed since the run ran (its file or a
                        local module it imports); without it such a resume stops with
                        WORKFLOW_CHANGED naming the tasks whose definitions changed (exit 2).
                        Finished tasks are kept either way (also: --accept-workflow-change)
  --detach              do not run it here: queue it (input checked now) for a smithers worker on
                        the same database, print its run id and exit 0 (with --resume: queue a resume)
  --priority N          with --detach: workers claim higher priorities first (an integer, default 0)
  --tenant T            with --detach: whose run it is; within a priority workers take turns
                        between tenants, so one tenant's backlog does not hold up another's run
  --idempotency-key K   with --detach: a start repeated with K (within 24h) names the first run
                        instead of queuing another; K with another request is IDEMPOTENCY_CONFLICT
  --debounce KEY=D      with --detach: while a start with KEY waits, another one replaces its input
                        and moves its start to D after the latest (e.g. sync=30s); one run per burst
  --log-format F        text (default) or json: each log line one JSON object (time, level, msg,
                        runId, nodeId, iteration, attempt, code), on the same stream as the text
                        line; default: $SMITHERS_LOG_FORMAT. The run's output stays as it is
worker      executes runs handed to workers (up --detach, runWorkflow's enqueue, serve --max-concurrent 0)
            under a lease; also wakes waiting runs that were answered or are due, takes over runs
            whose owner stopped heartbeating (a dead worker's), and starts due cron slots. Start one
            on every host; on PostgreSQL idle workers hear of new work at once (LISTEN/NOTIFY).
            Ctrl-C: take nothing more, finish the runs in flight; twice: exit now (other workers
            take those runs over once the lease runs out)
  --concurrency N       runs executing at once in this worker (default 4)
  --workflows DIR       run only the workflows in DIR (each *.tsx by file name, as serve does);
                        default: load the workflow file each run recorded
  --lease D             how long a claim or a run's heartbeat stays good, e.g. 30s (default 30s);
                        give every worker of a database the same value
  --poll-interval D     longest pause between looks for work (default 1s)
  --durability MODE     as for up, for the runs it executes
  --limit KEY=N         as for up, for the runs it executes; give every worker of a database the same
  --quiet               print what became of each run, not each task's progress
  --log-format F        as for up
  --metrics-port N      serve Prometheus metrics at http://127.0.0.1:N/metrics (0: any free port,
                        printed); loopback only, no token
ps          lists runs, newest first: id, status, workflow, start, duration, tasks done/total, cost;
            runs queued for workers and not started yet come first, status queued
  --status S            only runs in status S (queued, running, finished, continued, failed, cancelled,
                        paused, waiting-approval, waiting-event, waiting-timer, waiting-slot,
                        waiting-rate); below the table, the slots of each concurrency key in use
  --limit N             at most N runs (default 20)
  --json                a JSON array of runs (see docs/reference/cli.md)
limits      lists every concurrency and rate key of the database: the limits last declared for it,
            slots held/limit and tasks waiting for one, starts and tokens in the last minute, and
            how long a provider's 429 still holds it
  --json                a JSON array of keys (see docs/reference/cli.md)
inspect     shows a run: status, workflow and its file, input, its tasks (state, attempts, time,
            error, output row), pending approvals, human requests and waits, the concurrency slots
            it holds and waits for, and the tokens and cost its agents used (--json: the same as
            one JSON object, each node with its output)
sandboxes   lists a run's sandbox sessions (<Sandbox> / sandbox tasks): node, iteration, attempt,
            status (running, finished, failed, abandoned), exit code, pid, policy, start, end and
            the session's directory; a failure's reason below its line
  --json                a JSON array of sessions (see docs/reference/cli.md)
eval        compare: two runs (a run and its fork with another model or prompt, say) task by task,
            matched by node id and iteration: state, output rows side by side, each scorer's score in
            A and B and the change, tokens, cost, time; tasks only one run has; totals and each
            scorer's mean. Runs of different workflows are compared, with a warning line.
            <workflow.tsx> --cases: runs the workflow once per case of a JSONL file (each line
            {"input": …, "expected": …, "id": …}; each case its own run on the workflow's database)
            and prints case, run id, status, PASS/FAIL, each scorer's mean score and why. Exit 1
            (EVAL_FAILED) when a case fails; 2 (INVALID_EVAL_CASE, naming the line) for a line that
            is not a case, before any case runs
  --cases FILE          the cases, one JSON object per line (docs/guides/evals.md has the assertions)
  --concurrency N       cases run at once (default 1: one after another)
  --json                compare: the comparison as one JSON object; cases: every case's result
events      prints a run's events in order (seq, time, what happened)
  --after-seq N         only events after seq N
  --type T              only events of type T (repeat it, or T1,T2)
  --node ID             only events of node ID
  --follow              keep printing new events until the run has ended (a waiting run has not);
                        a run queued for workers (up --detach) is waited for until one starts it
  --json                one JSON object per line: { seq, runId, type, timestampMs, ...payload }
cancel      stops a run: a waiting run at once; a running one (in any process) at its owner's next
            heartbeat, its running attempts recorded cancelled; then waits for it to end and prints
            its status (exit 2 with RUN_ENDED for a run that already ended); a run still queued
            for workers is dropped from the queue
  --no-wait             return once the request is stored
  --timeout-ms N        how long to wait for the run to end (default 60000; exit 1 after it)
  --json                { "runId": …, "status": "cancelled" | "cancel-requested" | <final status> }
supervise   resumes runs whose owner stopped heartbeating, wakes waiting runs that were answered or are due,
            and starts due cron slots (one pass, or --watch to keep looking)
  --stale-after-ms N    heartbeat age that makes a running run stale (default: 4 of the run's own
                        heartbeats missed, 20 s at the default 5 s beat)
  --interval-ms N       pause between passes with --watch (default 1000)
  --interval D, --stale-threshold D
                        the peer's forms, durations like 30s or 1m (--interval implies --watch)
  --durability MODE     as for up, for the runs it resumes
  --log-format F        as for up
  --metrics-port N      with --watch: serve Prometheus metrics at http://127.0.0.1:N/metrics, as worker does
frames      lists a run's frames (number, encoding, bytes), or prints frame N's XML
timeline    the run's frames in order, each with its time and what changed in the plan: nodes
            mounted (+), unmounted (-), state and prop changes (~), and the runs forked from it (⑂)
            (--json: one object per frame, with its forks)
scores      the scorer results of a run (<Task scorers>): one line per attempt and scorer with its
            status (pending, scored, error), score, the attempt's latency, the scorer's own time and
            its reason or error; then per scorer the tasks scored, the mean, min and max of their
            latest scores, and the rows pending or failed
  --node ID             only the scores of task ID
  --json                { runId, scores: [...], summary: [...] } (see docs/reference/cli.md)
diff        the plan change between two frames of a run, in the same form (--json: one object)
fork        creates a new run (status paused, linked to its parent and frame) holding the run's
            outputs as of frame N; the parent is never changed. Side effects of the parent that the
            fork would run again stop it with SIDE_EFFECT_BOUNDARY (exit 2) unless --force
  --frame N             the frame to start from (smithers timeline lists them)
  --reset-node ID       run this task again, and everything downstream of it (repeatable)
  --input JSON          the fork's input (checked against the input schema); default: the parent's
  --run-id NEW          the fork's id (default: a new UUID)
  --run                 execute it now, as up --resume does (not with --json). A fork is pinned to
                        the code it is made with, so fork and replay refuse --allow-code-change
  --force               go on across side effects (recorded as a SideEffectBoundaryCrossed event)
  --workflow FILE       the workflow file (default: the one the run recorded)
replay      fork with the parent's input, then execute it (fork --run)
rewind      resets a finished, failed, cancelled or paused run in place to frame N: outputs,
            approvals and human requests of tasks not over at N and the frames after N are removed
            in one transaction (kept in a RunRewound event), those tasks are pending again and the
            run is paused. Tool calls with side effects it would discard first run their tool's
            revert, newest first; a call without one (or whose revert throws) stops it with
            SIDE_EFFECT_BOUNDARY unless --force
  --resume              continue the run at once, as up --resume does (not with --json)
  --no-revert           run no reverts (every side effect crossed then needs --force)
approve     decides a run's waiting <Approval> or <Task needsApproval> (deny: the same, denied);
            shows the request and asks on a terminal (--yes to skip); --node may be left out when
            one approval waits; a select gate takes --select KEY, a rank gate --rank K1,K2,…
signal      sends a signal to a run (checked against the schema of a node waiting for it); a node
            that waits for it later takes it then; with none waiting in the run, the <Subflow> child
            run that waits for it takes it (several: SIGNAL_AMBIGUOUS, send to one child's run id)
human       list: the open <HumanTask> requests (inbox); answer: checked against the task's schema;
            cancel: the task fails with HUMAN_TASK_CANCELLED
cron        schedules a workflow file on a cron pattern (5 or 6 fields, read in --tz, default UTC);
            supervise starts its due slots, each once; after downtime only the latest missed slot runs
serve       the HTTP API: start runs of the workflows in --workflows DIR (each *.tsx by file name),
            inspect, approve/deny, answer, signal, resume them, follow their events (SSE)
  --port N              port (default 7331; 0: any free port; the URL is printed)
  --host H              address (default 127.0.0.1; another needs a token, and TLS or --insecure-http)
  --token-file PATH     require Authorization: Bearer <the file's contents> (default: $SMITHERS_TOKEN);
                        at least 16 characters (openssl rand -hex 32 makes one)
  --token T             the same from the command line, where other users can read it (warned about)
  --tls-cert PEM        serve HTTPS with this certificate (chain) file; needs --tls-key
  --tls-key PEM         the certificate's private key file
  --insecure-http       plain HTTP on a non-loopback --host, because a proxy in front terminates TLS
  --max-body SIZE       largest request body and run input (default 1MiB; 512KB, 65536 …); more is 413
  --queue-capacity N    runs that may wait to start (default 1024); more are answered 503
  --max-concurrent N    runs executing at once (default 4); 0: only accept them, for smithers worker
                        processes on the same database to execute
  --lease D             as for worker (default 30s)
  --limit KEY=N         as for worker, for the runs this server executes
  --prune-older-than D  prune (as smithers prune) runs that ended longer ago than D, at start
                        and every hour
  --idempotency-window D  how long POST /runs remembers an Idempotency-Key and its run (default 24h)
  --log-format F        as for up
prune       removes the frames and events of runs that ended (finished, failed, cancelled,
            continued) more than --older-than ago (default 7d), keeping frame 0, the last frame
            (stored whole), the first and last event and every output row; never a running or
            waiting run. Reports what went and the bytes freed (--vacuum: VACUUM so the file shrinks;
            --dry-run: report only; --json: the report as JSON)
Every --db takes a SQLite path or a postgres:// URL, and defaults to SMITHERS_DATABASE_URL, else SMITHERS_DB_PATH, when set.
Every command takes --help (or: smithers help <command>).`;
