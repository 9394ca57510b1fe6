from backupbench.cli.entry import main

main()
