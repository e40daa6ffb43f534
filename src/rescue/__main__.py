from rescue._launch import main

main()
