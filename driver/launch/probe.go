package launch

import "context"

func runProbe(ctx context.Context, args []string, env Env) int { return ExitInternal }
