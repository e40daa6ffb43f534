from rescue.cli import main

main()
