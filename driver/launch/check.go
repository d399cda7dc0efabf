package launch

import "context"

func runCheck(ctx context.Context, args []string, env Env) int { return ExitInternal }
