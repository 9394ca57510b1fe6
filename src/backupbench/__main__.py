from backupbench.cli.app import main

main()
