import { isAsyncIterable, type Plugin } from '@envelop/core';
import { type ExecutionResult, GraphQLError } from 'graphql';

/** What this plugin needs of the operation's context (ServiceContext.breakGlassReads, set by
 * useServiceContext).
 */
interface AuditedContext {
  /** The reads noted under break-glass grants during the operation; `flush` writes their audit records. */
  breakGlassReads?: { readonly size: number; flush(context: AuditedContext): Promise<void> };
}

export interface BreakGlassAuditOptions {
  /** Whether a failed write means the grant the reads were made under has ended (answered FORBIDDEN, with
   * its message).
   */
  isGrantEnded: (error: unknown) => error is Error;
  /** Where a failed audit write is reported (the client only learns that nothing was returned). */
  logError?: (error: unknown) => void;
}

/**
 * Every read a platform admin makes under a break-glass grant is audited in the tenant's
 * own log before the answer leaves: after a query or mutation has executed, and before
 * each subscription event is sent, the reads noted during it (ServiceContext.breakGlassReads)
 * are written. If that write fails, the answer is replaced by an error: content is never
 * shown without its audit record. Must come after useServiceContext.
 */
export function useBreakGlassAudit(options: BreakGlassAuditOptions): Plugin {
  const flushOrWithhold = async (ctx: AuditedContext, setResult: (result: ExecutionResult) => void) => {
    if (!ctx.breakGlassReads?.size) return;
    try {
      await ctx.breakGlassReads.flush(ctx);
    } catch (error) {
      if (options.isGrantEnded(error)) {
        setResult({
          data: null,
          errors: [
            new GraphQLError(
              `This answer was withheld: ${error.message[0]!.toLowerCase()}${error.message.slice(1)} Open a new grant (openBreakGlass) if you still need it.`,
              { extensions: { code: 'FORBIDDEN' } },
            ),
          ],
        });
        return;
      }
      options.logError?.(error);
      setResult({
        data: null,
        errors: [
          new GraphQLError(
            'This answer was withheld: the audit record of a break-glass read could not be written. Try again.',
            { extensions: { code: 'SERVICE_UNAVAILABLE' } },
          ),
        ],
      });
    }
  };
  return {
    onExecute({ args }) {
      const ctx = args.contextValue as AuditedContext;
      return {
        async onExecuteDone({ result, setResult }) {
          if (!isAsyncIterable(result)) await flushOrWithhold(ctx, setResult);
        },
      };
    },
    onSubscribe({ args }) {
      const ctx = args.contextValue as AuditedContext;
      return {
        onSubscribeResult() {
          return {
            onNext: ({ setResult }) => flushOrWithhold(ctx, setResult),
          };
        },
      };
    },
  };
}
